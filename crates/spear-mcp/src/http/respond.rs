//! The answers spear writes itself (the rest are rmcp's): JSON bodies, the `401` challenge, the
//! metadata document, and reading the bearer token.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::{Response, StatusCode};

use super::METADATA_PATH;

/// A response body as hyper serves it.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// The bearer token of `Authorization: Bearer <token>`, if the request has one.
pub(crate) fn bearer(headers: &hyper::HeaderMap) -> Option<&str> {
    let value = headers.get(hyper::header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// `401` with the challenge MCP's authorization section asks for, naming the metadata document
/// of the server at `base` (`https://node.example:8443`).
pub(crate) fn unauthorized(why: &str, base: &str) -> Response<Body> {
    let mut response = json(
        StatusCode::UNAUTHORIZED,
        &serde_json::json!({"error": "invalid_token", "error_description": why}),
    );
    let challenge =
        format!("Bearer error=\"invalid_token\", resource_metadata=\"{base}{METADATA_PATH}\"");
    if let Ok(value) = hyper::header::HeaderValue::from_str(&challenge) {
        response
            .headers_mut()
            .insert(hyper::header::WWW_AUTHENTICATE, value);
    }
    response
}

/// An error of spear's own: `{"error": code, "error_description": why}` with `status`.
pub(crate) fn error(status: StatusCode, code: &str, why: &str) -> Response<Body> {
    json(
        status,
        &serde_json::json!({"error": code, "error_description": why}),
    )
}

/// `429` with `Retry-After: retry_after` (seconds): a limit is reached, `why` names it.
pub(crate) fn too_many(code: &str, why: &str, retry_after: &'static str) -> Response<Body> {
    let mut response = error(StatusCode::TOO_MANY_REQUESTS, code, why);
    response.headers_mut().insert(
        hyper::header::RETRY_AFTER,
        hyper::header::HeaderValue::from_static(retry_after),
    );
    response
}

/// `value` as a JSON body with `status`.
pub(crate) fn json(status: StatusCode, value: &serde_json::Value) -> Response<Body> {
    bytes(status, "application/json", value.to_string().into_bytes())
}

/// `body`, text, as `content_type` with `status`.
pub(crate) fn text(status: StatusCode, content_type: &'static str, body: String) -> Response<Body> {
    bytes(status, content_type, body.into_bytes())
}

/// `body` as `content_type` with `status`.
pub(crate) fn bytes(
    status: StatusCode,
    content_type: &'static str,
    body: Vec<u8>,
) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

/// `response` as sent: a refusal (any `4xx` or `5xx`, spear's or rmcp's) says `Connection:
/// close`. A request refused on its headers alone (a foreign `Host`, no token) may still have its
/// body on the way, and hyper closes such a connection after the answer; saying so up front keeps
/// a client from sending its next request down a connection that is about to close (what the
/// conformance suite's DNS-rebinding scenario did: its valid request failed with "other side
/// closed" after the refused one).
pub(crate) fn close_if_refused(mut response: Response<Body>) -> Response<Body> {
    if response.status().is_client_error() || response.status().is_server_error() {
        response.headers_mut().insert(
            hyper::header::CONNECTION,
            hyper::header::HeaderValue::from_static("close"),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bearer_token_is_read_from_the_header_only_when_it_is_one() {
        let cases: [(Option<&str>, Option<&str>); 6] = [
            (Some("Bearer spear_abc"), Some("spear_abc")),
            (Some("bearer  spear_abc "), Some("spear_abc")),
            (Some("Basic dXNlcjpwYXNz"), None),
            (Some("Bearer "), None),
            (Some("spear_abc"), None),
            (None, None),
        ];
        for (header, want) in cases {
            let mut headers = hyper::HeaderMap::new();
            if let Some(h) = header {
                headers.insert(
                    hyper::header::AUTHORIZATION,
                    hyper::header::HeaderValue::from_str(h).unwrap(),
                );
            }
            assert_eq!(bearer(&headers), want, "{header:?}");
        }
    }

    #[test]
    fn a_refusal_closes_its_connection_and_an_answer_keeps_it() {
        let refused = close_if_refused(unauthorized("no token", "http://127.0.0.1:4711"));
        assert_eq!(refused.headers()[hyper::header::CONNECTION], "close");
        let failed = close_if_refused(error(StatusCode::SERVICE_UNAVAILABLE, "unavailable", "x"));
        assert_eq!(failed.headers()[hyper::header::CONNECTION], "close");
        for status in [StatusCode::OK, StatusCode::ACCEPTED, StatusCode::CREATED] {
            let fine = close_if_refused(json(status, &serde_json::json!({})));
            assert!(
                !fine.headers().contains_key(hyper::header::CONNECTION),
                "{status}"
            );
        }
    }

    #[test]
    fn the_challenge_names_the_metadata_document() {
        let response = unauthorized("no token", "http://127.0.0.1:4711");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        let challenge = response.headers()[hyper::header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap();
        assert_eq!(
            challenge,
            "Bearer error=\"invalid_token\", \
             resource_metadata=\"http://127.0.0.1:4711/.well-known/oauth-protected-resource\""
        );
    }
}

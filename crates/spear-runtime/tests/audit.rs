//! The audit log end to end: redaction of a corpus of secrets as it reaches the file, one record
//! per line under injection and concurrency, file and directory modes, links refused, `tail`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use spear_core::redact::redact;
use spear_core::{CommandClass, ToolStatus};
use spear_runtime::default_audit_path as default_path;
use spear_runtime::{AuditError, AuditEvent, AuditLogger, AuditRecord};

/// The executable summary the decision layer makes of `script` (the one reading of the shell
/// whose summary the audit log records).
fn executable_summary(script: &str) -> String {
    static POLICY: std::sync::OnceLock<(tempfile::TempDir, spear_policy::CommandPolicy)> =
        std::sync::OnceLock::new();
    let (dir, policy) = POLICY.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let ws =
            spear_workspace::Workspace::open(&spear_workspace::WorkspaceConfig::new(dir.path()))
                .unwrap();
        let policy =
            spear_policy::CommandPolicy::new(Arc::new(ws), spear_policy::PolicyConfig::new(None));
        (dir, policy)
    });
    policy.classify_script(script, dir.path()).executable
}

// ---------------------------------------------------------------------------------------------
// Helpers

/// A record whose every string field holds `text`.
fn record_with(text: &str) -> AuditRecord {
    let mut r = AuditRecord::new(text, AuditEvent::ToolCall);
    r.turn = Some("3".into());
    r.principal = Some(text.to_owned());
    r.tool = Some(text.to_owned());
    r.target = Some(text.to_owned());
    r.class = Some(CommandClass::ShellComplex);
    r.capabilities = vec!["network".to_owned(), text.to_owned()];
    r.status = Some(ToolStatus::Ok);
    r.exit_code = Some(0);
    r.duration_ms = Some(12);
    r.changed_paths = vec!["src/main.rs".to_owned(), text.to_owned()];
    r.executable = Some(text.to_owned());
    r.reason = Some(text.to_owned());
    r.web = Some(spear_runtime::WebAudit {
        url: text.to_owned(),
        connected: Some(text.to_owned()),
        ..Default::default()
    });
    r
}

/// Every string value in a JSON value, decoded (so an escaped survivor is seen as it was).
fn strings_in(v: &serde_json::Value, out: &mut String) {
    match v {
        serde_json::Value::String(s) => {
            out.push_str(s);
            out.push('\u{0}');
        }
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings_in(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings_in(x, out)),
        _ => {}
    }
}

/// Asserts that no 5-character window of `secret` occurs in `haystack`.
fn assert_no_fragment(haystack: &str, secret: &str, case: &str) {
    let chars: Vec<char> = secret.chars().collect();
    assert!(
        chars.len() >= 5,
        "{case}: secret {secret:?} is too short to check"
    );
    for window in chars.windows(5) {
        let fragment: String = window.iter().collect();
        assert!(
            !haystack.contains(&fragment),
            "{case}: fragment {fragment:?} of the secret survived:\n{haystack}"
        );
    }
}

/// A fresh log in its own directory.
fn fresh_log() -> (tempfile::TempDir, PathBuf, AuditLogger) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state").join("audit.jsonl");
    let logger = AuditLogger::open(&path).unwrap();
    (dir, path, logger)
}

fn lines_of(path: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn mode(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().mode() & 0o7777
}

// ---------------------------------------------------------------------------------------------
// The secrets corpus

/// (name, text as it would appear, the secret values in it).
const CORPUS: &[(&str, &str, &[&str])] = &[
    (
        "github classic token in a token header",
        "curl -H 'Authorization: token ghp_Q8v2LmN4pR7sT1wX9yZ3aB5cD6eF0gH2iJ4k' https://api.github.com/user",
        &["ghp_Q8v2LmN4pR7sT1wX9yZ3aB5cD6eF0gH2iJ4k"],
    ),
    (
        "github oauth token after a flag",
        "gh auth login --with-token gho_7Hk2Pq9Wm4Xr1Tz8Vn3Bc6Ld5Fs0Gj2Ya9Qe",
        &["gho_7Hk2Pq9Wm4Xr1Tz8Vn3Bc6Ld5Fs0Gj2Ya9Qe"],
    ),
    (
        "github user token in URL userinfo",
        "git clone https://x-access-token:ghu_4Rt7Yu1Io9Pa3Sd6Fg8Hj2Kl5Zx0Cv7Bn4Mq@github.com/org/repo.git",
        &["ghu_4Rt7Yu1Io9Pa3Sd6Fg8Hj2Kl5Zx0Cv7Bn4Mq"],
    ),
    (
        "github app token in JSON",
        r#"{"token":"ghs_2Wq8Er5Ty1Ui7Op3As9Df4Gh6Jk0Lz2Xc8Vb"}"#,
        &["ghs_2Wq8Er5Ty1Ui7Op3As9Df4Gh6Jk0Lz2Xc8Vb"],
    ),
    (
        "github refresh token bare",
        "echo ghr_9Mn2Bv5Cx8Zl1Kj4Hg7Fd0Sa3Po6Iu9Yt2Re",
        &["ghr_9Mn2Bv5Cx8Zl1Kj4Hg7Fd0Sa3Po6Iu9Yt2Re"],
    ),
    (
        "github fine-grained token in an export",
        "export GH_PAT=github_pat_11AJKQ2ZY0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789AbCdEfGhIjKlMnOpQrStUvWx",
        &["github_pat_11AJKQ2ZY0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789AbCdEfGhIjKlMnOpQrStUvWx"],
    ),
    (
        "openai key in an env assignment",
        "OPENAI_API_KEY=sk-4fJ9kL2mN7pQ1rS8tU3vW6xY0zA5bC2dE9fG4hI7jK1lM3nO python app.py",
        &["sk-4fJ9kL2mN7pQ1rS8tU3vW6xY0zA5bC2dE9fG4hI7jK1lM3nO"],
    ),
    (
        "openai project key as an argument",
        "python eval.py sk-proj-Zx8Cv2Bn5Mq1Wd7Ef4Rg9Th3Yj6Uk0Il-Op2As5Df8Gh1Jk_Lz4Xc7Vb",
        &["sk-proj-Zx8Cv2Bn5Mq1Wd7Ef4Rg9Th3Yj6Uk0Il-Op2As5Df8Gh1Jk_Lz4Xc7Vb"],
    ),
    (
        "anthropic key in an x-api-key header",
        "curl -H \"x-api-key: sk-ant-api03-Qw3Er7Ty1Ui5Op9As2Df6Gh0Jk4Lz8Xc3Vb7Nm1Qa5Ws9Ed-Rf2Tg6Yh0AA\" https://api.anthropic.com/v1/messages",
        &["sk-ant-api03-Qw3Er7Ty1Ui5Op9As2Df6Gh0Jk4Lz8Xc3Vb7Nm1Qa5Ws9Ed-Rf2Tg6Yh0AA"],
    ),
    (
        "slack bot token in form data",
        "curl -d token=xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx https://slack.com/api/chat.postMessage",
        &["xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"],
    ),
    (
        "slack user token under a plain name",
        "SLACK=\"xoxp-2345678901-3456789012-4567890123-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d\" ./notify",
        &["xoxp-2345678901-3456789012-4567890123-0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d"],
    ),
    (
        "aws access key id as an argument",
        "aws configure set aws_access_key_id AKIAQ3EGRTYUIO7PLKJH",
        &["AKIAQ3EGRTYUIO7PLKJH"],
    ),
    (
        "aws session key id in an env assignment",
        "AWS_ACCESS_KEY_ID=ASIAZXCVBNMLKJHG4F2D aws s3 ls",
        &["ASIAZXCVBNMLKJHG4F2D"],
    ),
    (
        "aws secret in a credentials file",
        "[default]\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = eu-west-1",
        &["wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"],
    ),
    (
        "aws secret in YAML",
        "env:\n  AWS_SECRET_ACCESS_KEY: \"9dR2kL+pQ7sT1wX4yZ8aB3cD/eF6gH0iJ5kL2mN7\"",
        &["9dR2kL+pQ7sT1wX4yZ8aB3cD/eF6gH0iJ5kL2mN7"],
    ),
    (
        "google api key in a query string",
        "curl \"https://maps.googleapis.com/maps/api/geocode/json?address=x&key=AIzaSyD4kL9mN2pQ7rS1tU8vW3xY6zA0bC5dE9f\"",
        &["AIzaSyD4kL9mN2pQ7rS1tU8vW3xY6zA0bC5dE9f"],
    ),
    (
        "stripe live key as basic-auth user",
        "curl https://api.stripe.com/v1/charges -u sk_live_51H8xYzAbCdEfGhIjKlMnOpQr2StUvWxYz:",
        &["sk_live_51H8xYzAbCdEfGhIjKlMnOpQr2StUvWxYz"],
    ),
    (
        "stripe restricted key under a plain name",
        "STRIPE_RESTRICTED=rk_live_51Jk2Lm3Nn4Op5Pq6Qr7Rs8St9Tu0Uv1Vw node billing.js",
        &["rk_live_51Jk2Lm3Nn4Op5Pq6Qr7Rs8St9Tu0Uv1Vw"],
    ),
    (
        "npm token in an npmrc line",
        "echo \"//registry.npmjs.org/:_authToken=npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8\" > .npmrc",
        &["npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"],
    ),
    (
        "jwt as an argument",
        "./client --session eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        &[
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        ],
    ),
    (
        "jwt in a bearer header",
        "curl -H \"Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIn0.c2lnbmF0dXJlLWJ5dGVzLWhlcmU\" https://api.example.com",
        &[
            "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lkcC5leGFtcGxlIn0.c2lnbmF0dXJlLWJ5dGVzLWhlcmU",
        ],
    ),
    (
        "rsa private key PEM block",
        "cat > id_rsa <<EOF\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----\nEOF",
        &[
            "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
            "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
        ],
    ),
    (
        "openssh private key PEM block",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDh8QbZ2yVr5mJpL3kXw9Tq0UaN7cEoFgHiJkLmNoPqRsAAAAJg\n-----END OPENSSH PRIVATE KEY-----\n",
        &[
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW",
            "QyNTUxOQAAACDh8QbZ2yVr5mJpL3kXw9Tq0UaN7cEoFgHiJkLmNoPqRsAAAAJg",
        ],
    ),
    (
        "PEM key with escaped newlines in a service-account JSON",
        r#"{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n-----END PRIVATE KEY-----\n"}"#,
        &["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"],
    ),
    (
        "PEM key written by printf, no name before it",
        "printf '%s' '-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIBkgT2f3Lm9Qp8Rs7Tu6Vw5Xy4Za3Bc2De1Fg0HiJk\\n-----END EC PRIVATE KEY-----' > ec.pem",
        &["MHcCAQEEIBkgT2f3Lm9Qp8Rs7Tu6Vw5Xy4Za3Bc2De1Fg0HiJk"],
    ),
    (
        "PEM block cut off before its END line",
        "-----BEGIN PRIVATE KEY-----\nMIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDTr1Xq9uVw",
        &["MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDTr1Xq9uVw"],
    ),
    (
        "basic auth header",
        "curl -H 'Authorization: Basic YWRtaW46UzNjcjN0UGFzc3cwcmQh' https://intranet.example.com",
        &["YWRtaW46UzNjcjN0UGFzc3cwcmQh"],
    ),
    (
        "digest auth header",
        "Authorization: Digest username=\"bob\", realm=\"api\", nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", response=\"6629fae49393a05397450978507c4ef1\"",
        &[
            "dcd98b7102dd2f0e8b11d0f600bfb0c093",
            "6629fae49393a05397450978507c4ef1",
        ],
    ),
    (
        "proxy authorization header",
        "curl -H 'Proxy-Authorization: Basic cHJveHl1c2VyOnByMHh5UGFzcw==' -x http://proxy:3128 https://example.com",
        &["cHJveHl1c2VyOnByMHh5UGFzcw=="],
    ),
    (
        "authorization header inside JSON",
        r#"{"headers": {"Authorization": "Bearer ya29.a0AfH6SMBx3kLm9Qp2Rs7Tu1Vw4Xy8Za5Bc0De6Fg3Hi"}}"#,
        &["ya29.a0AfH6SMBx3kLm9Qp2Rs7Tu1Vw4Xy8Za5Bc0De6Fg3Hi"],
    ),
    (
        "authorization header with an unknown scheme",
        "curl -H 'Authorization: ApiKey-v2 Zq1Xw2Ce3Vr4Bt5Ny6Mu7' https://h.example.com",
        &["Zq1Xw2Ce3Vr4Bt5Ny6Mu7"],
    ),
    (
        "database URL with a password",
        "psql postgres://admin:Sup3rS3cr3tPassw0rd@db.internal:5432/app",
        &["Sup3rS3cr3tPassw0rd"],
    ),
    (
        "git remote with a password",
        "git push https://deploy:hunter2hunter2@git.example.com/team/repo.git main",
        &["hunter2hunter2"],
    ),
    (
        "sentry DSN with a key in its userinfo",
        "SENTRY_DSN=https://4f2e8a1b9c3d4e5f6a7b8c9d0e1f2a3b@o123456.ingest.sentry.io/7654321 ./run",
        &["4f2e8a1b9c3d4e5f6a7b8c9d0e1f2a3b"],
    ),
    (
        "quoted password flag",
        "mysql -u root --password='Tr0ub4dor&3xq' production",
        &["Tr0ub4dor&3xq"],
    ),
    (
        "password in an env assignment",
        "PGPASSWORD=correcthorsebatterystaple psql -h db -U app",
        &["correcthorsebatterystaple"],
    ),
    (
        "quoted password with spaces in YAML",
        "database:\n  password: \"my very s3cret phrase\"\n  pool: 5",
        &["my very s3cret phrase"],
    ),
    (
        "token flag with a separate value",
        "terraform login --token ABCdef123456xyzUVW789",
        &["ABCdef123456xyzUVW789"],
    ),
    (
        "api key flag with =",
        "datadog-agent --api-key=0f1e2d3c4b5a69788796a5b4c3d2e1f0 status",
        &["0f1e2d3c4b5a69788796a5b4c3d2e1f0"],
    ),
    (
        "client secret in a query string",
        "curl 'https://oauth.example.com/token?grant_type=client_credentials&client_id=app1&client_secret=Xk9Lm2Nq7Pr4St1Uv8Wx3Yz'",
        &["Xk9Lm2Nq7Pr4St1Uv8Wx3Yz"],
    ),
    (
        "x-api-key header with a hex key",
        "curl -H 'X-Api-Key: 7c4a8d09ca3762af61e59520943dc26494f8941b' https://api.example.com",
        &["7c4a8d09ca3762af61e59520943dc26494f8941b"],
    ),
    (
        "cookie header",
        "curl -H 'Cookie: sessionid=q8w7e6r5t4y3u2i1o0p9; csrftoken=Zx1Cv2Bn3Mq4Wd5Ef6Rg' https://app.example.com",
        &["q8w7e6r5t4y3u2i1o0p9", "Zx1Cv2Bn3Mq4Wd5Ef6Rg"],
    ),
    (
        "azure storage connection string",
        "AZURE_STORAGE_CONNECTION_STRING=\"DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net\" az storage ls",
        &[
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
        ],
    ),
    (
        "gitlab token in URL userinfo",
        "git clone https://oauth2:glpat-Ab3Cd5Ef7Gh9Ij1Kl3Mn@gitlab.com/g/p.git",
        &["glpat-Ab3Cd5Ef7Gh9Ij1Kl3Mn"],
    ),
    (
        "hugging face token",
        "HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 python train.py",
        &["hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"],
    ),
    (
        "sendgrid key in a bearer header",
        "curl -H \"Authorization: Bearer SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012\" https://api.sendgrid.com/v3/mail/send",
        &["SG.aBcDeFgHiJkLmNoPqRsTuV.wXyZ0123456789aBcDeFgHiJkLmNoPqRsTuVwXyZ012"],
    ),
    (
        "digitalocean token after a short flag",
        "doctl auth init -t dop_v1_4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b",
        &["dop_v1_4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b"],
    ),
    (
        "pypi token after -p",
        "twine upload -u __token__ -p pypi-AgEIcHlwaS5vcmcCJGE4ZjY3ZjU2LTk0NjAtNDQ1Mi05NmY3LTA3ZTM3ZWNjNmY1YQ dist/x.whl",
        &["pypi-AgEIcHlwaS5vcmcCJGE4ZjY3ZjU2LTk0NjAtNDQ1Mi05NmY3LTA3ZTM3ZWNjNmY1YQ"],
    ),
    (
        "django secret key, quoted, full of punctuation",
        "SECRET_KEY='django-insecure-8x#k2$m9@q!w7e^r5t&y3u*i1o' ./manage.py runserver",
        &["django-insecure-8x#k2$m9@q!w7e^r5t&y3u*i1o"],
    ),
    (
        "bare hex key in a custom header",
        "curl -H \"X-Custom: 3f786850e387550fdab836ed7e6dc881de23001b\" https://h.example.com",
        &["3f786850e387550fdab836ed7e6dc881de23001b"],
    ),
    (
        "bare base64 key",
        "echo 'Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr' | base64 -d",
        &["Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWpr"],
    ),
    (
        "password in escaped JSON",
        r#"{\"user\":\"bob\",\"password\":\"esc4pedS3cretVal\"}"#,
        &["esc4pedS3cretVal"],
    ),
    (
        "netrc line",
        "machine api.example.com login bob password n3trcS3cretPw",
        &["n3trcS3cretPw"],
    ),
    (
        "twilio sid and auth token as basic-auth",
        "curl -u AC0123456789abcdef0123456789abcdef:9f8e7d6c5b4a39281716f5e4d3c2b1a0 https://api.twilio.com",
        &["9f8e7d6c5b4a39281716f5e4d3c2b1a0"],
    ),
    (
        "password assignment with spaces in a login command",
        "vault login -method=userpass username=bob password='s3cr3t P@ss w0rd'",
        &["s3cr3t P@ss w0rd"],
    ),
    (
        "shopify token under a plain name",
        "SHOPIFY=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 ./sync",
        &["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"],
    ),
    (
        "age secret key",
        "echo AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSQ5NZ3X > key.txt",
        &["AGE-SECRET-KEY-1QYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSZQGPQYQSQ5NZ3X"],
    ),
    (
        "dotenv file contents",
        "DB_HOST=localhost\nDB_PASSWORD=pg_Pa55w0rd_2024\nDEBUG=1",
        &["pg_Pa55w0rd_2024"],
    ),
    (
        "token built from shell-quoted pieces",
        "DEPLOY_TOKEN=tok'en with spaces'Xy9Qw8\"and more\" ./deploy",
        &["tok'en with spaces'Xy9Qw8\"and more\""],
    ),
    (
        "camelCase api key in a JS object",
        "const cfg = { apiKey: 'AbC123xYz789QwE456rTy', region: 'us' }",
        &["AbC123xYz789QwE456rTy"],
    ),
];

#[test]
fn secrets_corpus_never_reaches_the_log() {
    let shapes: HashSet<&str> = CORPUS.iter().map(|(name, _, _)| *name).collect();
    assert!(shapes.len() >= 40, "{} distinct shapes", shapes.len());
    assert_eq!(shapes.len(), CORPUS.len(), "case names are distinct");
    for &(case, text, secrets) in CORPUS {
        // Each case in its own log, so that one case's kept text cannot fail another's check.
        let (_dir, path, logger) = fresh_log();
        logger.log(&record_with(text)).unwrap();
        let mut summary = record_with(&executable_summary(text));
        summary.event = AuditEvent::RepeatedRefusalStopped;
        logger.log(&summary).unwrap();

        let raw = fs::read_to_string(&path).unwrap();
        assert_eq!(raw.lines().count(), 2, "{case}: one line per record");
        let mut decoded = String::new();
        for line in raw.lines() {
            strings_in(&serde_json::from_str(line).unwrap(), &mut decoded);
        }
        assert!(
            decoded.contains("[REDACTED]"),
            "{case}: nothing was redacted"
        );
        for secret in secrets {
            assert!(text.contains(secret), "{case}: the secret is in the text");
            assert_no_fragment(&raw, secret, case);
            assert_no_fragment(&decoded, secret, case);
        }
    }
}

#[test]
fn the_fragment_check_catches_a_surviving_secret() {
    // Positive control of the helper itself: an unredacted secret fails it.
    let secret = "correcthorsebatterystaple";
    let caught = std::panic::catch_unwind(|| {
        assert_no_fragment("xx horsebat xx", secret, "control");
    });
    assert!(caught.is_err());
    assert_no_fragment("xx [REDACTED] xx", secret, "control");
}

#[test]
fn executable_summaries_of_the_corpus_hold_no_secret() {
    for &(case, text, secrets) in CORPUS {
        let summary = executable_summary(text);
        for secret in secrets {
            assert_no_fragment(&summary, secret, case);
        }
    }
}

#[test]
fn ordinary_text_stays_readable() {
    let plain = [
        "git status",
        "cargo test --all",
        "src/main.rs",
        "crates/spear-policy/src/tokenizer.rs",
        "src/auth/session.rs",
        "docs/password-reset.md",
        "tests/secret_scanning.rs",
        "src/components/NavBar2/index.tsx",
        "target/x86_64-unknown-linux-gnu/release/build/ring-0.17.8/out",
        "cargo (2 args)",
        "git (1 arg) + 2 more",
        "README.md",
        "terminal",
        "session-7f3a",
        "550e8400-e29b-41d4-a716-446655440000",
        "7f3a9c2e1b4d8f60",
        "network",
        "git log --author=alice --since=2024-01-01",
        "Cargo.lock",
    ];
    let (_dir, path, logger) = fresh_log();
    for text in plain {
        logger.log(&record_with(text)).unwrap();
    }
    let records = lines_of(&path);
    assert_eq!(records.len(), plain.len());
    for (text, r) in plain.iter().zip(&records) {
        assert_eq!(redact(text), *text);
        for field in ["session", "tool", "target", "executable", "reason"] {
            assert_eq!(r[field], *text, "{field} of {text:?}");
        }
        assert_eq!(r["changed_paths"][1], *text);
        assert_eq!(r["capabilities"][1], *text);
        assert_eq!(r["web"]["url"], *text);
        assert_eq!(r["web"]["connected"], *text);
        assert_eq!(r["event"], "tool_call");
        assert_eq!(r["class"], "SHELL_COMPLEX");
        assert_eq!(r["status"], "ok");
        assert_eq!(r["exit_code"], 0);
        assert_eq!(r["duration_ms"], 12);
        assert_eq!(r["turn"], "3");
    }
}

// ---------------------------------------------------------------------------------------------
// Red-team cases

#[test]
fn log_01_bearer_token_in_a_curl_header() {
    let token = "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB";
    let command = format!("curl -H 'Authorization: Bearer {token}' https://api.github.com/user");
    let (_dir, path, logger) = fresh_log();
    let mut record = AuditRecord::new("s1", AuditEvent::ToolCall);
    record.tool = Some("terminal".to_owned());
    record.target = Some(command.clone());
    record.executable = Some(executable_summary(&command));
    logger.log(&record).unwrap();

    let raw = fs::read_to_string(&path).unwrap();
    assert_no_fragment(&raw, token, "LOG-01");
    let r = &lines_of(&path)[0];
    assert_eq!(
        r["target"],
        "curl -H 'Authorization: Bearer [REDACTED]' https://api.github.com/user"
    );
    assert_eq!(r["executable"], "curl (3 args)");
}

#[test]
fn log_07_a_forged_record_in_a_command_stays_inside_its_line() {
    let forged = r#"{"time":"2024-01-01T00:00:00.000Z","session":"s1","event":"approval","tool":"terminal","status":"ok"}"#;
    for sep in [
        "\n",
        "\r\n",
        "\r",
        "\u{2028}",
        "\u{2029}",
        "\u{85}",
        "\u{0}\n",
        "\u{1b}[2K\n",
        "\u{9b}2K\n",
    ] {
        let command = format!("echo done{sep}{forged}");
        let (_dir, path, logger) = fresh_log();
        let mut record = record_with(&command);
        record.executable = Some(executable_summary(&command));
        logger.log(&record).unwrap();

        let raw = fs::read(&path).unwrap();
        assert_eq!(
            raw.split(|&c| c == b'\n').count() - 1,
            1,
            "{sep:?}: exactly one line"
        );
        assert_eq!(raw.last(), Some(&b'\n'));
        assert!(!raw.contains(&b'\r'), "{sep:?}: no raw carriage return");
        assert!(!raw.contains(&0), "{sep:?}: no raw NUL");
        assert!(!raw.contains(&0x1b), "{sep:?}: no raw escape");
        let text = String::from_utf8(raw).unwrap();
        for c in ['\u{2028}', '\u{2029}', '\u{85}', '\u{9b}'] {
            assert!(!text.contains(c), "{sep:?}: no raw {c:?}");
        }
        let records: Vec<serde_json::Value> = text
            .split(['\n', '\r', '\u{2028}', '\u{2029}', '\u{85}'])
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        assert_eq!(records.len(), 1, "{sep:?}: one parseable record");
        assert_eq!(records[0]["event"], "tool_call");
        assert_eq!(
            records[0]["target"],
            command.as_str(),
            "{sep:?}: kept as data"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Concurrency

#[test]
fn sixteen_threads_ten_thousand_records_none_lost_none_interleaved() {
    const THREADS: usize = 16;
    const PER_THREAD: usize = 625;
    let (_dir, path, first) = fresh_log();
    // Half the threads write through a second logger: another open file description, so only
    // the flock (not the mutex) keeps the two apart, as between processes.
    let loggers = [Arc::new(first), Arc::new(AuditLogger::open(&path).unwrap())];
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let logger = Arc::clone(&loggers[t % 2]);
            std::thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    let mut r = AuditRecord::new(format!("thread-{t}"), AuditEvent::ToolCall);
                    r.turn = Some(seq.to_string());
                    // Some records far larger than a pipe buffer.
                    let paths = if seq.is_multiple_of(97) { 300 } else { seq % 5 };
                    r.changed_paths = (0..paths)
                        .map(|i| format!("src/module_{t}/file_{seq}_{i}.rs"))
                        .collect();
                    logger.log(&r).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }

    let raw = fs::read_to_string(&path).unwrap();
    assert!(raw.ends_with('\n'));
    let mut seen = HashSet::new();
    for line in raw.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let session = r["session"].as_str().unwrap().to_owned();
        let turn: u64 = r["turn"].as_str().unwrap().parse().unwrap();
        let t: usize = session.strip_prefix("thread-").unwrap().parse().unwrap();
        let expected_paths = if turn.is_multiple_of(97) {
            300
        } else {
            turn % 5
        };
        assert_eq!(
            r["changed_paths"].as_array().unwrap().len() as u64,
            expected_paths
        );
        assert!(t < THREADS && turn < PER_THREAD as u64);
        assert!(seen.insert((t, turn)), "({t}, {turn}) twice");
    }
    assert_eq!(raw.lines().count(), THREADS * PER_THREAD);
    assert_eq!(seen.len(), THREADS * PER_THREAD);
}

#[test]
fn the_logger_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<AuditLogger>();
}

// ---------------------------------------------------------------------------------------------
// The file and its directory

#[test]
fn new_directories_are_0700_and_the_log_0600() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("a").join("b");
    let path = state.join("audit.jsonl");
    let logger = AuditLogger::open(&path).unwrap();
    assert_eq!(logger.path(), path);
    logger
        .log(&AuditRecord::new("s", AuditEvent::Undo))
        .unwrap();
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&dir.path().join("a")), 0o700);
    assert_eq!(lines_of(&path)[0]["event"], "undo");
}

#[test]
fn wider_modes_of_our_own_entries_are_tightened() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir(&state).unwrap();
    fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).unwrap();
    let path = state.join("audit.jsonl");
    fs::write(&path, "").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!((mode(&state), mode(&path)), (0o755, 0o644), "control");

    let _logger = AuditLogger::open(&path).unwrap();
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn reopening_appends() {
    let (_dir, path, logger) = fresh_log();
    logger
        .log(&AuditRecord::new("one", AuditEvent::ToolCall))
        .unwrap();
    drop(logger);
    let logger = AuditLogger::open(&path).unwrap();
    logger
        .log(&AuditRecord::new("two", AuditEvent::ToolCall))
        .unwrap();
    let sessions: Vec<_> = lines_of(&path)
        .iter()
        .map(|r| r["session"].clone())
        .collect();
    assert_eq!(sessions, ["one", "two"]);
}

#[test]
fn a_symlink_at_the_log_path_is_refused_and_its_target_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir(&state).unwrap();
    let victim = dir.path().join("bashrc");
    fs::write(&victim, "original\n").unwrap();
    let path = state.join("audit.jsonl");
    std::os::unix::fs::symlink(&victim, &path).unwrap();

    let err = AuditLogger::open(&path).unwrap_err();
    assert!(matches!(err, AuditError::Symlink { .. }), "{err}");
    assert!(err.to_string().contains("symbolic link"), "{err}");
    assert_eq!(fs::read_to_string(&victim).unwrap(), "original\n");

    // A dangling link is refused too, and nothing is created where it points.
    let missing = dir.path().join("created-through-link");
    let dangling = state.join("dangling.jsonl");
    std::os::unix::fs::symlink(&missing, &dangling).unwrap();
    let err = AuditLogger::open(&dangling).unwrap_err();
    assert!(matches!(err, AuditError::Symlink { .. }), "{err}");
    assert!(!missing.exists());

    // Positive control: a real file beside it opens and is written.
    let real = state.join("real.jsonl");
    AuditLogger::open(&real)
        .unwrap()
        .log(&AuditRecord::new("s", AuditEvent::ToolCall))
        .unwrap();
    assert_eq!(lines_of(&real).len(), 1);
}

#[test]
fn a_symlinked_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let link = dir.path().join("state");
    std::os::unix::fs::symlink(&elsewhere, &link).unwrap();

    let err = AuditLogger::open(&link.join("audit.jsonl")).unwrap_err();
    assert!(matches!(err, AuditError::Symlink { .. }), "{err}");
    assert_eq!(
        fs::read_dir(&elsewhere).unwrap().count(),
        0,
        "nothing created"
    );

    // Positive control: the real directory itself is accepted.
    AuditLogger::open(&elsewhere.join("audit.jsonl")).unwrap();
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 1);
}

#[test]
fn a_hard_link_at_the_log_path_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir(&state).unwrap();
    let victim = dir.path().join("profile");
    fs::write(&victim, "original\n").unwrap();
    let path = state.join("audit.jsonl");
    fs::hard_link(&victim, &path).unwrap();

    let err = AuditLogger::open(&path).unwrap_err();
    assert!(
        matches!(err, AuditError::HardLinked { links: 2, .. }),
        "{err}"
    );
    assert_eq!(fs::read_to_string(&victim).unwrap(), "original\n");
}

#[test]
fn a_fifo_at_the_log_path_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let err = AuditLogger::open(&path).unwrap_err();
    assert!(
        matches!(
            err,
            AuditError::WrongType {
                expected: "regular file",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_relative_or_nameless_path_is_refused() {
    let err = AuditLogger::open(Path::new("audit.jsonl")).unwrap_err();
    assert!(matches!(err, AuditError::NotAbsolute { .. }), "{err}");
    assert!(!Path::new("audit.jsonl").exists());
    let err = AuditLogger::open(Path::new("/")).unwrap_err();
    assert!(matches!(err, AuditError::NoFileName { .. }), "{err}");
}

#[test]
fn an_unterminated_last_line_is_ended_before_the_next_record() {
    let (_dir, path, logger) = fresh_log();
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"torn"))
        .unwrap();
    logger
        .log(&AuditRecord::new("after", AuditEvent::ToolCall))
        .unwrap();
    let raw = fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = raw.lines().collect();
    assert_eq!(lines[0], "{\"torn");
    let r: serde_json::Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(r["session"], "after");
}

#[test]
fn default_path_prefers_xdg_state_home() {
    assert_eq!(
        default_path(Some(Path::new("/s")), Some(Path::new("/h"))),
        Some(PathBuf::from("/s/spear/audit.jsonl"))
    );
    assert_eq!(
        default_path(None, Some(Path::new("/h"))),
        Some(PathBuf::from("/h/.local/state/spear/audit.jsonl"))
    );
    assert_eq!(default_path(None, None), None);
}

// ---------------------------------------------------------------------------------------------
// tail

#[test]
fn tail_returns_the_last_lines_in_order() {
    let (_dir, path, logger) = fresh_log();
    for seq in 0..1000u64 {
        let mut r = AuditRecord::new("s", AuditEvent::ToolCall);
        r.turn = Some(seq.to_string());
        logger.log(&r).unwrap();
    }
    let turns = |lines: Vec<String>| -> Vec<u64> {
        lines
            .iter()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["turn"]
                    .as_str()
                    .unwrap()
                    .parse::<u64>()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(turns(AuditLogger::tail(&path, 3).unwrap()), [997, 998, 999]);
    assert_eq!(turns(AuditLogger::tail(&path, 1).unwrap()), [999]);
    assert!(AuditLogger::tail(&path, 0).unwrap().is_empty());
    let all = turns(AuditLogger::tail(&path, 5000).unwrap());
    assert_eq!(all, (0..1000).collect::<Vec<_>>());
    // More lines than one chunk holds.
    let many = turns(AuditLogger::tail(&path, 900).unwrap());
    assert_eq!(many, (100..1000).collect::<Vec<_>>());
}

#[test]
fn tail_handles_lines_longer_than_a_chunk_and_no_final_newline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.jsonl");
    let long = "x".repeat(200_000);
    fs::write(&path, format!("first\n{long}\nsecond\nthird")).unwrap();
    assert_eq!(AuditLogger::tail(&path, 2).unwrap(), ["second", "third"]);
    assert_eq!(
        AuditLogger::tail(&path, 3).unwrap(),
        [long.as_str(), "second", "third"]
    );
    assert_eq!(
        AuditLogger::tail(&path, 10).unwrap(),
        ["first", long.as_str(), "second", "third"]
    );
    fs::write(&path, "").unwrap();
    assert!(AuditLogger::tail(&path, 5).unwrap().is_empty());
    fs::write(&path, "\n\n").unwrap();
    assert_eq!(AuditLogger::tail(&path, 5).unwrap(), ["", ""]);
}

#[test]
fn tail_refuses_a_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let victim = dir.path().join("secret.txt");
    fs::write(&victim, "do not show\n").unwrap();
    let path = dir.path().join("audit.jsonl");
    std::os::unix::fs::symlink(&victim, &path).unwrap();
    let err = AuditLogger::tail(&path, 5).unwrap_err();
    assert!(matches!(err, AuditError::Symlink { .. }), "{err}");
    // Positive control: the file itself can be tailed.
    assert_eq!(AuditLogger::tail(&victim, 5).unwrap(), ["do not show"]);
}

// ---------------------------------------------------------------------------------------------
// Executable summaries through the public API

#[test]
fn executable_summary_table() {
    let cases = [
        ("FOO=1 BAR=x cargo test --all", "cargo (2 args)"),
        ("env -i HOME=/h PATH=/bin make", "make (0 args)"),
        ("git status", "git (1 arg)"),
        (
            "cargo fmt && cargo clippy -- -D warnings && cargo test",
            "cargo (1 arg) + 2 more",
        ),
        (
            "API_TOKEN=ghp_0123456789abcdefghijklmnopqrstuvwxyzAB gh api user",
            "gh (2 args)",
        ),
        ("mysql --password=hunter2 -e 'select 1'", "mysql (3 args)"),
        ("", "(empty)"),
    ];
    for (command, want) in cases {
        assert_eq!(executable_summary(command), want, "{command:?}");
    }
}

#[test]
fn a_rotated_log_stays_bounded_and_keeps_the_newest_records_of_every_writer() {
    const THREADS: usize = 8;
    const PER_THREAD: usize = 500;
    const ROTATE_AT: u64 = 64 << 10;
    let (_dir, path, first) = fresh_log();
    // Two open file descriptions, as two processes: each must notice the other's rotation.
    let loggers = [
        Arc::new(first.with_rotation(ROTATE_AT)),
        Arc::new(AuditLogger::open(&path).unwrap().with_rotation(ROTATE_AT)),
    ];
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let logger = Arc::clone(&loggers[t % 2]);
            std::thread::spawn(move || {
                for seq in 0..PER_THREAD {
                    let mut r = AuditRecord::new(format!("thread-{t}"), AuditEvent::ToolCall);
                    r.turn = Some(seq.to_string());
                    logger.log(&r).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    // The newest record of all.
    loggers[0]
        .log(&AuditRecord::new("last".to_owned(), AuditEvent::ToolCall))
        .unwrap();
    let older = AuditLogger::rotated_path(&path);
    let record_max = 1 << 10;
    let mut total = 0;
    for p in [&path, &older] {
        let size = fs::metadata(p).unwrap().len();
        assert!(
            size <= ROTATE_AT + record_max,
            "{} holds {size} bytes",
            p.display()
        );
        total += size;
    }
    // Positive control: what was written is far more than what is kept.
    assert!(
        (THREADS * PER_THREAD) as u64 * 100 > 2 * ROTATE_AT,
        "the test writes too little to rotate"
    );
    let mut kept: Vec<Vec<u64>> = vec![Vec::new(); THREADS];
    for p in [&older, &path] {
        for r in lines_of(p) {
            let Some(t) = r["session"].as_str().unwrap().strip_prefix("thread-") else {
                continue;
            };
            let t: usize = t.parse().unwrap();
            kept[t].push(r["turn"].as_str().unwrap().parse().unwrap());
        }
    }
    let last = lines_of(&path);
    assert_eq!(
        last.last().unwrap()["session"],
        "last",
        "the newest record is kept"
    );
    assert!(
        kept.iter().map(Vec::len).sum::<usize>() > 100,
        "a log and its rotated one hold more than a few records"
    );
    for (t, seqs) in kept.iter_mut().enumerate() {
        seqs.sort_unstable();
        let n = seqs.len() as u64;
        // The newest records are kept, and what is kept is a run ending at the last one.
        let want: Vec<u64> = (PER_THREAD as u64 - n..PER_THREAD as u64).collect();
        assert_eq!(*seqs, want, "thread {t}");
    }
    // `tail` reaches into the rotated log when the new one is short.
    let newest = lines_of(&path).len();
    let tail = AuditLogger::tail(&path, newest + 5).unwrap();
    assert_eq!(tail.len(), newest + 5, "{total}");
}

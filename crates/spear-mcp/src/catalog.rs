//! The router's view in MCP's words, as pure functions: tool specs become MCP tools (schema,
//! output schema, annotations), envelopes become `CallToolResult`s (structured content, a text
//! rendering, `isError`).

use std::fmt::Write as _;
use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use spear_tools::{ToolResultEnvelope, ToolSpec};

/// The MCP tool for `spec`: its input schema, the envelope's `output_schema`, and every annotation
/// set explicitly (a client must not fall back on MCP's defaults, which assume the worst for some
/// and the best for none).
pub fn mcp_tool(spec: &ToolSpec, output_schema: &Arc<JsonObject>) -> Tool {
    let a = spec.annotations;
    let mut annotations = ToolAnnotations::default();
    annotations.read_only_hint = Some(a.read_only);
    annotations.destructive_hint = Some(a.destructive);
    annotations.idempotent_hint = Some(a.idempotent);
    annotations.open_world_hint = Some(a.open_world);
    let mut tool = Tool::default();
    tool.name = spec.name.into();
    tool.description = Some(spec.description.into());
    tool.input_schema = Arc::new(as_object(&spec.input_schema));
    tool.output_schema = Some(Arc::clone(output_schema));
    tool.annotations = Some(annotations);
    tool
}

/// The schema `value` as a JSON object a client's validator takes without complaint: the
/// integer formats schemars adds (`uint64`, `int32`, ...) are not JSON Schema's, and strict
/// validators (ajv) warn about every one, so only the standard formats are kept. Anything that is
/// not an object (a schema always is) becomes `{}`.
pub fn as_object(value: &serde_json::Value) -> JsonObject {
    let mut value = value.clone();
    keep_standard_formats(&mut value);
    match value {
        serde_json::Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// The formats JSON Schema 2020-12 defines.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn keep_standard_formats(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            if map
                .get("format")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|f| !STANDARD_FORMATS.contains(&f))
            {
                map.remove("format");
            }
            map.values_mut().for_each(keep_standard_formats);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(keep_standard_formats),
        _ => {}
    }
}

/// The MCP result for `envelope`: the envelope as structured content, its text rendering as the
/// one content block, and `isError` for every status but ok.
pub fn call_result(envelope: &ToolResultEnvelope) -> CallToolResult {
    // The router escapes every answer it gives; an envelope made elsewhere (a refusal before the
    // router) is escaped here, the last step before the wire.
    let escaped;
    let envelope = if envelope.has_controls() {
        let mut copy = envelope.clone();
        copy.escape_controls();
        escaped = copy;
        &escaped
    } else {
        envelope
    };
    let structured = serde_json::to_value(envelope).unwrap_or_else(|e| {
        serde_json::json!({ "status": "failed", "reason": format!("cannot encode the result: {e}") })
    });
    let text = render_text(envelope);
    let mut result = if envelope.is_ok() {
        CallToolResult::success(vec![ContentBlock::text(text)])
    } else {
        CallToolResult::error(vec![ContentBlock::text(text)])
    };
    result.structured_content = Some(structured);
    result
}

/// The envelope as text, for clients that show only text: a status line, then each part that is
/// not empty under its own heading.
pub fn render_text(envelope: &ToolResultEnvelope) -> String {
    let r = &envelope.result;
    let mut head = format!("{}: {}", envelope.tool, r.status.as_str());
    if let Some(code) = r.exit_code {
        let _ = write!(head, ", exit code {code}");
    }
    if let Some(class) = r.class {
        let _ = write!(head, ", class {}", class.as_str());
    }
    let _ = write!(head, ", {} ms", r.duration_ms);
    if r.truncated {
        head.push_str(", output cut");
    }
    let mut out = head;
    let mut section = |title: &str, body: &str| {
        if !body.is_empty() {
            let _ = write!(out, "\n{title}:\n{body}");
            if !body.ends_with('\n') {
                out.push('\n');
            }
        }
    };
    if let Some(reason) = &r.reason {
        section("reason", reason);
    }
    section("stdout", &r.stdout);
    section("stderr", &r.stderr);
    section("changed", &r.changed_paths.join("\n"));
    if let Some(job) = &envelope.job {
        section("job", &format!("{} ({})", job.id, job.state));
    }
    for (what, reference) in [
        ("stdout", &envelope.output_ref),
        ("stderr", &envelope.stderr_ref),
    ] {
        if let Some(reference) = reference {
            section(
                "stored",
                &format!("the whole {what} is kept: read_output {{\"ref\": \"{reference}\"}}"),
            );
        }
    }
    if envelope.turn_stopped {
        section(
            "turn stopped",
            "this turn answers nothing more; ask the user how to go on",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use spear_core::{CommandClass, ToolResult, ToolStatus};
    use spear_tools::{JobState, ToolRegistry};

    fn envelope(status: ToolStatus) -> ToolResultEnvelope {
        let mut r = ToolResult::new(status);
        r.duration_ms = 7;
        ToolResultEnvelope::new("terminal", r)
    }

    /// An envelope made outside the router (a refusal before it runs) is escaped on its way to
    /// the wire, in the structured content and the text block; a plain one is passed as it is.
    #[test]
    fn call_results_carry_no_control_characters() {
        let mut e = envelope(ToolStatus::Denied);
        e.result.reason = Some("refused `a\u{1b}]52;c;aGk=\u{7}\u{9b}2J`".to_owned());
        let result = call_result(&e);
        let s = result.structured_content.unwrap();
        assert_eq!(s["reason"], "refused `a\\u{1b}]52;c;aGk=\\u{7}\\u{9b}2J`");
        assert_eq!(s["escaped"], serde_json::json!({"reason": 3}));
        let text = &result.content[0].as_text().unwrap().text;
        assert!(text.contains("a\\u{1b}]52;c;aGk=\\u{7}\\u{9b}2J"), "{text}");
        assert!(!spear_core::visible::has_controls(text), "{text:?}");
        // Positive control: a plain reason is passed as it is, with nothing counted.
        let mut plain = envelope(ToolStatus::Denied);
        plain.result.reason = Some("refused `a`".to_owned());
        let s = call_result(&plain).structured_content.unwrap();
        assert_eq!(s["reason"], "refused `a`");
        assert!(s["escaped"].is_null());
    }

    #[test]
    fn every_spec_becomes_a_tool_with_every_annotation_set() {
        let schema = Arc::new(as_object(&spear_tools::output_schema()));
        for spec in ToolRegistry::coding().specs() {
            let tool = mcp_tool(spec, &schema);
            let json = serde_json::to_value(&tool).unwrap();
            assert_eq!(json["name"], spec.name);
            assert_eq!(json["inputSchema"]["type"], "object", "{}", spec.name);
            assert_eq!(json["outputSchema"]["type"], "object", "{}", spec.name);
            let a = &json["annotations"];
            assert_eq!(
                a["readOnlyHint"], spec.annotations.read_only,
                "{}",
                spec.name
            );
            assert_eq!(a["destructiveHint"], spec.annotations.destructive);
            assert_eq!(a["idempotentHint"], spec.annotations.idempotent);
            assert_eq!(a["openWorldHint"], spec.annotations.open_world);
        }
    }

    #[test]
    fn only_standard_formats_are_published() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0},
                "at": {"type": "string", "format": "date-time"},
                "list": {"type": "array", "items": {"type": "integer", "format": "int32"}},
                "format": {"type": "string"}
            }
        });
        let out = serde_json::Value::Object(as_object(&schema));
        assert_eq!(
            out["properties"]["n"],
            serde_json::json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(out["properties"]["at"]["format"], "date-time");
        assert_eq!(
            out["properties"]["list"]["items"],
            serde_json::json!({"type": "integer"})
        );
        // A property that happens to be called `format` is not a format keyword.
        assert_eq!(
            out["properties"]["format"],
            serde_json::json!({"type": "string"})
        );
        let all = serde_json::to_string(&as_object(&spear_tools::output_schema())).unwrap();
        assert!(!all.contains("uint"), "{all}");
        assert_eq!(as_object(&serde_json::json!([1])), JsonObject::new());
    }

    #[test]
    fn read_tools_are_read_only_and_writers_destructive() {
        let schema = Arc::new(JsonObject::new());
        let registry = ToolRegistry::coding();
        let hint = |name: &str| {
            let spec = registry.specs().find(|s| s.name == name).unwrap();
            mcp_tool(spec, &schema).annotations.unwrap()
        };
        for name in ["read_file", "search_files", "read_output"] {
            let a = hint(name);
            assert_eq!(
                (a.read_only_hint, a.destructive_hint),
                (Some(true), Some(false))
            );
        }
        for name in ["write_file", "patch", "delete_file", "terminal"] {
            let a = hint(name);
            assert_eq!(
                (a.read_only_hint, a.destructive_hint),
                (Some(false), Some(true))
            );
        }
        assert_eq!(hint("terminal").open_world_hint, Some(true));
        assert_eq!(hint("read_file").open_world_hint, Some(false));
    }

    #[test]
    fn is_error_for_every_status_but_ok() {
        for (status, is_error) in [
            (ToolStatus::Ok, false),
            (ToolStatus::Denied, true),
            (ToolStatus::Cancelled, true),
            (ToolStatus::InvalidPath, true),
            (ToolStatus::NotFound, true),
            (ToolStatus::Timeout, true),
            (ToolStatus::Failed, true),
        ] {
            let result = call_result(&envelope(status));
            assert_eq!(result.is_error, Some(is_error), "{status:?}");
            let s = result.structured_content.unwrap();
            assert_eq!(s["status"], status.as_str());
            for field in ToolResult::KEYS {
                assert!(s.get(field).is_some(), "{field} missing for {status:?}");
            }
        }
    }

    #[test]
    fn text_names_status_and_every_part_that_is_there() {
        let mut e = envelope(ToolStatus::Failed);
        e.result.exit_code = Some(2);
        e.result.class = Some(CommandClass::ReadOnly);
        e.result.stdout = "out".into();
        e.result.stderr = "err\n".into();
        e.result.reason = Some("it failed".into());
        e.result.changed_paths = vec!["a.txt".into(), "b.txt".into()];
        e.output_ref = Some("abc".into());
        e.job = Some(JobState::running("j1"));
        let text = render_text(&e);
        assert!(
            text.starts_with("terminal: failed, exit code 2, class READ_ONLY, 7 ms"),
            "{text}"
        );
        for part in [
            "reason:\nit failed\n",
            "stdout:\nout\n",
            "stderr:\nerr\n",
            "changed:\na.txt\nb.txt\n",
            "job:\nj1 (running)",
            "read_output {\"ref\": \"abc\"}",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        let quiet = render_text(&envelope(ToolStatus::Ok));
        assert_eq!(quiet, "terminal: ok, 7 ms");
    }
}

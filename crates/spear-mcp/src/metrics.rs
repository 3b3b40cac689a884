//! What the server has done, for `/metrics`: sessions, calls by tool and status, refusals by
//! rule, call and command latency, resident memory; rendered in Prometheus's text exposition
//! format 0.0.4 ([`METRICS_CONTENT_TYPE`]).
//!
//! What it guarantees:
//!
//! - **Cheap to record.** Two atomics for sessions; one short lock per call, held for a few map
//!   updates, never across I/O.
//! - **Bounded.** Tool names come from clients: at most [`MAX_TOOLS`] distinct ones are kept,
//!   later ones counted under `other`; statuses and rules are spear's own fixed names. Attack
//!   stopped: a client inflating the server's memory (and every scrape) with made-up tool names.
//! - **Valid exposition.** Every family has its `# HELP` and `# TYPE`; label values are escaped
//!   (`\`, `"`, newline); histogram buckets are cumulative and end with `+Inf`, equal to
//!   `_count`.
//! - **No secrets.** Only names spear chose or the catalog lists, counts and durations: no
//!   arguments, paths, output or credentials.
//!
//! Series (all prefixed `spear_`): `sessions_opened_total`, `sessions_closed_total`,
//! `sessions_open`, `tool_calls_total{tool,status}`, `refusals_total{rule}`,
//! `tool_call_duration_seconds{tool}` (histogram), `command_duration_seconds` (histogram),
//! `resident_memory_bytes`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use spear_core::ToolResult;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The upper bounds of the latency histograms' buckets, in seconds (`+Inf` follows).
pub const BUCKETS: [f64; 13] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The most distinct tool names kept; calls of others are counted as tool `other`.
pub const MAX_TOOLS: usize = 64;

/// The tool label of calls past [`MAX_TOOLS`].
const OTHER_TOOL: &str = "other";

/// One tool call as [`Metrics::record`] counts it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord<'a> {
    /// The tool's name (the server passes only names its catalog lists).
    pub tool: &'a str,
    /// How it ended: a `ToolResult` status (`ok`, `denied`, `cancelled`, `invalid_path`,
    /// `not_found`, `timeout`, `failed`), or `input_required` (a question deferred to the
    /// client).
    pub status: &'static str,
    /// The refusal's rule, when a rule refused it.
    pub rule: Option<&'static str>,
    /// The call's wall-clock time in the server, waiting for a slot included.
    pub elapsed: Duration,
    /// The command's own time, when the call ran a command in the sandbox.
    pub command: Option<Duration>,
}

impl<'a> CallRecord<'a> {
    /// The record of a call of `tool` that ended with `result` after `elapsed`. A command is one
    /// the sandbox confined (its result carries guarantees), timed by the result's `duration_ms`.
    pub fn of_result(tool: &'a str, result: &ToolResult, elapsed: Duration) -> Self {
        CallRecord {
            tool,
            status: result.status.as_str(),
            rule: result.rule().map(spear_core::RefusalRule::as_str),
            elapsed,
            command: result
                .guarantees
                .is_some()
                .then(|| Duration::from_millis(result.duration_ms)),
        }
    }

    /// The record of a call that ended without a result, as `status`.
    pub fn without_result(tool: &'a str, status: &'static str, elapsed: Duration) -> Self {
        CallRecord {
            tool,
            status,
            rule: None,
            elapsed,
            command: None,
        }
    }
}

/// The server's counters. `Send + Sync`; share it as `Arc<Metrics>`.
#[derive(Default)]
pub struct Metrics {
    sessions_opened: AtomicU64,
    sessions_closed: AtomicU64,
    calls: Mutex<Calls>,
}

#[derive(Default, Clone)]
struct Calls {
    by_status: BTreeMap<(String, &'static str), u64>,
    refusals: BTreeMap<&'static str, u64>,
    latency: BTreeMap<String, Histogram>,
    commands: Histogram,
}

#[derive(Default, Clone)]
struct Histogram {
    /// Observations per bucket (not cumulative); the last is `+Inf`'s own.
    counts: [u64; BUCKETS.len() + 1],
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let i = BUCKETS
            .iter()
            .position(|le| seconds <= *le)
            .unwrap_or(BUCKETS.len());
        self.counts[i] += 1;
        self.sum += seconds;
    }

    fn count(&self) -> u64 {
        self.counts.iter().sum()
    }
}

impl Metrics {
    /// Empty counters.
    pub fn new() -> Self {
        Metrics::default()
    }

    /// Counts a session opened.
    pub fn session_opened(&self) {
        self.sessions_opened.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a session closed.
    pub fn session_closed(&self) {
        self.sessions_closed.fetch_add(1, Ordering::Relaxed);
    }

    /// Sessions opened and not yet closed, by these counters.
    pub fn sessions_open(&self) -> usize {
        let opened = self.sessions_opened.load(Ordering::Relaxed);
        let closed = self.sessions_closed.load(Ordering::Relaxed);
        usize::try_from(opened.saturating_sub(closed)).unwrap_or(usize::MAX)
    }

    /// Counts one call: by tool and status, its rule, its latency, and its command's.
    pub fn record(&self, call: &CallRecord<'_>) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let tool = if calls.latency.contains_key(call.tool) || calls.latency.len() < MAX_TOOLS {
            call.tool
        } else {
            OTHER_TOOL
        };
        *calls
            .by_status
            .entry((tool.to_owned(), call.status))
            .or_default() += 1;
        if let Some(rule) = call.rule {
            *calls.refusals.entry(rule).or_default() += 1;
        }
        calls
            .latency
            .entry(tool.to_owned())
            .or_default()
            .observe(call.elapsed.as_secs_f64());
        if let Some(command) = call.command {
            calls.commands.observe(command.as_secs_f64());
        }
    }

    /// The counters in the text exposition format 0.0.4, with `sessions_open` as the gauge of
    /// sessions open (the caller's count) and this process's resident memory read now.
    pub fn render(&self, sessions_open: usize) -> String {
        // Copied out, so that the lock is not held while the text is written.
        let calls = self
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut out = String::new();
        let opened = self.sessions_opened.load(Ordering::Relaxed);
        let closed = self.sessions_closed.load(Ordering::Relaxed);
        let open = u64::try_from(sessions_open).unwrap_or(u64::MAX);
        for (name, kind, help, value) in [
            (
                "spear_sessions_opened_total",
                "counter",
                "MCP sessions opened.",
                opened,
            ),
            (
                "spear_sessions_closed_total",
                "counter",
                "MCP sessions closed.",
                closed,
            ),
            (
                "spear_sessions_open",
                "gauge",
                "MCP sessions open now.",
                open,
            ),
        ] {
            family(&mut out, name, kind, help);
            sample(&mut out, name, &[], value);
        }
        let name = "spear_tool_calls_total";
        family(
            &mut out,
            name,
            "counter",
            "Tool calls ended, by tool and status.",
        );
        for ((tool, status), n) in &calls.by_status {
            sample(&mut out, name, &[("tool", tool), ("status", status)], n);
        }
        let name = "spear_refusals_total";
        family(
            &mut out,
            name,
            "counter",
            "Tool calls refused, by the rule that refused them.",
        );
        for (rule, n) in &calls.refusals {
            sample(&mut out, name, &[("rule", rule)], n);
        }
        let name = "spear_tool_call_duration_seconds";
        family(
            &mut out,
            name,
            "histogram",
            "Tool calls' time in the server, by tool.",
        );
        for (tool, h) in &calls.latency {
            histogram(&mut out, name, &[("tool", tool)], h);
        }
        let name = "spear_command_duration_seconds";
        family(
            &mut out,
            name,
            "histogram",
            "Commands' time in the sandbox.",
        );
        histogram(&mut out, name, &[], &calls.commands);
        let name = "spear_resident_memory_bytes";
        family(
            &mut out,
            name,
            "gauge",
            "The server process's resident memory.",
        );
        if let Some(bytes) = std::fs::read_to_string("/proc/self/statm")
            .ok()
            .and_then(|statm| resident_bytes(&statm, rustix::param::page_size()))
        {
            sample(&mut out, name, &[], bytes);
        }
        out
    }
}

/// The resident memory `/proc/self/statm` says (its second field, in pages of `page` bytes).
/// Pure.
fn resident_bytes(statm: &str, page: usize) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    pages.checked_mul(u64::try_from(page).ok()?)
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {}", escape_help(help));
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
    let _ = writeln!(out, "{name}{} {value}", label_set(labels));
}

fn histogram(out: &mut String, name: &str, labels: &[(&str, &str)], h: &Histogram) {
    let mut cumulative = 0;
    for (i, n) in h.counts.iter().enumerate() {
        cumulative += n;
        let le = BUCKETS
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), f64::to_string);
        let mut with_le = labels.to_vec();
        with_le.push(("le", &le));
        sample(out, &format!("{name}_bucket"), &with_le, cumulative);
    }
    sample(out, &format!("{name}_sum"), labels, h.sum);
    sample(out, &format!("{name}_count"), labels, h.count());
}

/// `{a="x",b="y"}`, or nothing without labels.
fn label_set(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A label value as the format spells it: `\` `"` and newline escaped. Pure.
fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A `# HELP` text: `\` and newline escaped. Pure.
fn escape_help(text: &str) -> String {
    text.replace('\\', "\\\\").replace('\n', "\\n")
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use spear_core::{Refusal, ToolStatus};

    /// Checks that `text` is valid exposition format 0.0.4 as spear writes it: each line a
    /// `# HELP`, a `# TYPE` or a sample of a family typed before it, names and labels well
    /// formed, values numbers; each histogram's buckets cumulative, ending with `+Inf` equal to
    /// its `_count`. Panics naming the line otherwise.
    pub(crate) fn validate(text: &str) {
        assert!(text.ends_with('\n'), "the text ends with a newline");
        let mut types: BTreeMap<String, String> = BTreeMap::new();
        // (family, labels without le) -> (last cumulative count, +Inf seen)
        let mut buckets: BTreeMap<(String, String), (f64, Option<f64>)> = BTreeMap::new();
        let mut counts: BTreeMap<(String, String), f64> = BTreeMap::new();
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# HELP ") {
                let (name, _) = rest.split_once(' ').expect(line);
                assert!(is_metric_name(name), "{line}");
                continue;
            }
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect(line);
                assert!(is_metric_name(name), "{line}");
                assert!(
                    ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                    "{line}"
                );
                assert!(
                    types.insert(name.to_owned(), kind.to_owned()).is_none(),
                    "{line}"
                );
                continue;
            }
            assert!(!line.starts_with('#') && !line.is_empty(), "{line:?}");
            let (name, labels, value) = parse_sample(line);
            let value: f64 = match value {
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().unwrap_or_else(|_| panic!("a number: {line}")),
            };
            let family = ["_bucket", "_sum", "_count"]
                .iter()
                .find_map(|s| {
                    name.strip_suffix(s)
                        .filter(|f| types.get(*f).is_some_and(|t| t == "histogram"))
                })
                .unwrap_or(name);
            assert!(
                types.contains_key(family),
                "typed before its samples: {line}"
            );
            let without_le: Vec<&(String, String)> =
                labels.iter().filter(|(k, _)| k != "le").collect();
            let key = (family.to_owned(), format!("{without_le:?}"));
            if name.ends_with("_bucket") && family != name {
                let le = &labels.iter().find(|(k, _)| k == "le").expect(line).1;
                let entry = buckets.entry(key).or_insert((0.0, None));
                assert!(value >= entry.0, "cumulative: {line}");
                entry.0 = value;
                if le == "+Inf" {
                    entry.1 = Some(value);
                }
            } else if name.ends_with("_count") && family != name {
                counts.insert(key, value);
            }
        }
        for (key, (_, inf)) in &buckets {
            let inf = inf.unwrap_or_else(|| panic!("{key:?} has no +Inf bucket"));
            assert_eq!(Some(&inf), counts.get(key), "{key:?}: +Inf equals _count");
        }
    }

    fn is_metric_name(name: &str) -> bool {
        let mut chars = name.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
    }

    /// A sample line's name, labels (unescaped) and value.
    fn parse_sample(line: &str) -> (&str, Vec<(String, String)>, &str) {
        let name_end = line.find(['{', ' ']).expect(line);
        let name = &line[..name_end];
        assert!(is_metric_name(name), "{line}");
        let mut labels = Vec::new();
        let mut rest = &line[name_end..];
        if let Some(after) = rest.strip_prefix('{') {
            let mut chars = after.char_indices().peekable();
            loop {
                let start = chars.peek().expect(line).0;
                let mut end = start;
                for (i, c) in chars.by_ref() {
                    if c == '=' {
                        end = i;
                        break;
                    }
                }
                let key = &after[start..end];
                assert!(
                    is_metric_name(key) && !key.contains(':'),
                    "a label name: {line}"
                );
                assert_eq!(chars.next().map(|(_, c)| c), Some('"'), "{line}");
                let mut value = String::new();
                loop {
                    match chars.next().expect(line).1 {
                        '"' => break,
                        '\\' => match chars.next().expect(line).1 {
                            '\\' => value.push('\\'),
                            '"' => value.push('"'),
                            'n' => value.push('\n'),
                            other => panic!("a bad escape \\{other}: {line}"),
                        },
                        '\n' => panic!("a raw newline: {line}"),
                        c => value.push(c),
                    }
                }
                labels.push((key.to_owned(), value));
                match chars.next().expect(line) {
                    (_, ',') => {}
                    (i, '}') => {
                        rest = &after[i + 1..];
                        break;
                    }
                    (_, c) => panic!("unexpected {c:?}: {line}"),
                }
            }
        }
        let value = rest.strip_prefix(' ').expect(line);
        assert!(!value.contains(' '), "no timestamp: {line}");
        (name, labels, value)
    }

    #[test]
    fn calls_are_counted_and_rendered_line_by_line() {
        let m = Metrics::new();
        m.session_opened();
        m.session_opened();
        m.session_closed();
        assert_eq!(m.sessions_open(), 1);
        let ok = ToolResult::new(ToolStatus::Ok);
        m.record(&CallRecord::of_result(
            "read_file",
            &ok,
            Duration::from_secs_f64(0.003_906_25),
        ));
        m.record(&CallRecord::of_result(
            "read_file",
            &ok,
            Duration::from_secs_f64(0.031_25),
        ));
        let denied = ToolResult::denied(&Refusal::request_state_refused("terminal", "x"));
        let rule = denied.rule().unwrap().as_str();
        m.record(&CallRecord::of_result(
            "terminal",
            &denied,
            Duration::from_secs(20),
        ));
        m.record(&CallRecord {
            tool: "weird\"tool\\with\nnewline",
            status: "ok",
            rule: None,
            elapsed: Duration::from_millis(1),
            command: Some(Duration::from_millis(700)),
        });
        let text = m.render(1);
        validate(&text);
        let lines: Vec<&str> = text.lines().collect();
        for want in [
            "# HELP spear_sessions_opened_total MCP sessions opened.",
            "# TYPE spear_sessions_opened_total counter",
            "spear_sessions_opened_total 2",
            "spear_sessions_closed_total 1",
            "# TYPE spear_sessions_open gauge",
            "spear_sessions_open 1",
            "# TYPE spear_tool_calls_total counter",
            "spear_tool_calls_total{tool=\"read_file\",status=\"ok\"} 2",
            "spear_tool_calls_total{tool=\"terminal\",status=\"denied\"} 1",
            "spear_tool_calls_total{tool=\"weird\\\"tool\\\\with\\nnewline\",status=\"ok\"} 1",
            &format!("spear_refusals_total{{rule=\"{rule}\"}} 1"),
            "# TYPE spear_tool_call_duration_seconds histogram",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"0.001\"} 0",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"0.0025\"} 0",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"0.005\"} 1",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"0.025\"} 1",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"0.05\"} 2",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"10\"} 2",
            "spear_tool_call_duration_seconds_bucket{tool=\"read_file\",le=\"+Inf\"} 2",
            "spear_tool_call_duration_seconds_sum{tool=\"read_file\"} 0.03515625",
            "spear_tool_call_duration_seconds_count{tool=\"read_file\"} 2",
            "spear_tool_call_duration_seconds_bucket{tool=\"terminal\",le=\"10\"} 0",
            "spear_tool_call_duration_seconds_bucket{tool=\"terminal\",le=\"+Inf\"} 1",
            "spear_tool_call_duration_seconds_sum{tool=\"terminal\"} 20",
            "# TYPE spear_command_duration_seconds histogram",
            "spear_command_duration_seconds_bucket{le=\"0.5\"} 0",
            "spear_command_duration_seconds_bucket{le=\"1\"} 1",
            "spear_command_duration_seconds_sum 0.7",
            "spear_command_duration_seconds_count 1",
            "# TYPE spear_resident_memory_bytes gauge",
        ] {
            assert!(lines.contains(&want), "missing {want:?} in\n{text}");
        }
        let rss = lines
            .iter()
            .find_map(|l| l.strip_prefix("spear_resident_memory_bytes "))
            .expect("resident memory");
        assert!(rss.parse::<u64>().unwrap() > 0);
    }

    #[test]
    fn made_up_tool_names_do_not_grow_the_metrics() {
        let m = Metrics::new();
        let ok = ToolResult::new(ToolStatus::Ok);
        for i in 0..MAX_TOOLS + 10 {
            m.record(&CallRecord::of_result(
                &format!("tool{i}"),
                &ok,
                Duration::ZERO,
            ));
        }
        // A tool already known keeps its own label past the bound.
        m.record(&CallRecord::of_result("tool0", &ok, Duration::ZERO));
        let text = m.render(0);
        validate(&text);
        assert!(text.contains("spear_tool_calls_total{tool=\"other\",status=\"ok\"} 10\n"));
        assert!(text.contains("spear_tool_calls_total{tool=\"tool0\",status=\"ok\"} 2\n"));
        assert!(!text.contains(&format!("tool{}", MAX_TOOLS + 1)));
    }

    #[test]
    fn escaping_follows_the_format() {
        for (raw, label, help) in [
            ("plain", "plain", "plain"),
            ("a\"b", "a\\\"b", "a\"b"),
            ("a\\b", "a\\\\b", "a\\\\b"),
            ("a\nb", "a\\nb", "a\\nb"),
        ] {
            assert_eq!(escape_label(raw), label, "{raw:?}");
            assert_eq!(escape_help(raw), help, "{raw:?}");
        }
    }

    #[test]
    fn resident_memory_is_read_from_statm() {
        assert_eq!(
            resident_bytes("1000 250 30 1 0 200 0\n", 4096),
            Some(1_024_000)
        );
        assert_eq!(resident_bytes("1000", 4096), None);
        assert_eq!(resident_bytes("", 4096), None);
        assert_eq!(resident_bytes("1000 x", 4096), None);
    }

    #[test]
    #[should_panic(expected = "cumulative")]
    fn the_validator_catches_a_histogram_that_is_not_cumulative() {
        validate(
            "# HELP h x\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n\
             h_sum 1\nh_count 1\n",
        );
    }

    #[test]
    #[should_panic(expected = "a bad escape")]
    fn the_validator_catches_a_bad_escape() {
        validate("# HELP c x\n# TYPE c counter\nc{a=\"\\x\"} 1\n");
    }
}

#!/usr/bin/env python3
"""Writes the checked-in seed corpora under fuzz/seeds/ (run from anywhere; deterministic).

- seeds/classify_script/: every command of testdata/redteam-public-cases.jsonl whose `input` is a
  string or an object with a `command` field (placeholders such as {WS} are kept: the target
  substitutes them), and one command from each of 200 tldr pages (seeded sample) with the tldr
  placeholders written out (`{{[-a|--all]}}` -> `-a`, `{{path/to/file}}` -> `path/to/file`).
  Plus inline programs and scratch variables (CLASSIFY_INLINE).
- regressions/classify_script/: the inputs of fixed crashes and hangs (CLASSIFY_REGRESSIONS), one
  file each, named for what they broke (other files there, and other targets' regressions, are
  written by hand and left alone).
- seeds/resolve/: the `path` of every file-tool case of the red-team file, and hand-picked paths
  for the resolve fixture (see fuzz/src/lib.rs; the target substitutes {WS}, {BASE}, {OTHER}).
"""

import json
import random
import re
import shutil
from pathlib import Path

FUZZ = Path(__file__).resolve().parent
TESTDATA = FUZZ.parent / "testdata"
TLDR_SAMPLE = 200

# Inputs that once crashed or hung a target (fixed since): kept so a regression shows at once.
CLASSIFY_REGRESSIONS = {
    "brace-seq-overflow": "echo {9223372036854775808..1}",
    "tilde-dirstack-overflow": "cat ~+99999999999999999999/x; x=~-99999999999999999999 ls",
    "brace-backtracking": "as ath/to/ou{{{{{{{{{{{{{{{{{{{{{{{{{{{tput_file.o",
    "sed-multibyte-flag": "sed -\u00e9e '1e touch x' README.md",
    "io-number-overflow": "echo 99999999999999999999>x",
    "paren-run-backtracking": "(" * 47 + "hash x",
    "paren-depth-backtracking": "h |" + "((((\0" * 6,
}

# Inline programs and scratch variables (issue 32): the file-call scanner of each language and
# the variable tracking get inputs that reach them.
CLASSIFY_INLINE = {
    "python-read": "python3 -c \"import json; print(json.load(open('data.json', mode='r')))\"",
    "python-path": "python3 -c \"from pathlib import Path; Path('a').write_text(Path('b').read_text())\"",
    "python-heredoc": "python3 - <<'EOF'\npath = '/admin/auth/foo'\nopen(f'{path}.txt', 'w')\n\"\"\"x\"\"\"\nEOF",
    "node-require": "node -e \"const fs = require('fs'); fs.copyFileSync(require('./p.json').a, `${x}`)\"",
    "ruby-paren-less": "ruby -e 'FileUtils.mkdir_p \"a/b\" if File.exist?(\"#{x}\")'",
    "perl-open": "perl -e 'open(my $f, \">\", \"out\") or die; unlink \"a\", \"b\"; print $#ARGV'",
    "php-file": "php -r 'file_put_contents(\"/etc/x\", file_get_contents(\"a\"));'",
    "mktemp-var": "d=$(mktemp -d -t x.XXXX) && cd \"$d\" && tar -x -C \"${d}/y\" -f a.tar; d+=z",
    "tmpdir-var": "out=$TMPDIR/b; t=/tmp/x; cp -r src \"$out\" $t/../y",
}

RESOLVE_SEEDS = [
    "README.md", "src/main.rs", "./src/../src/lib.rs", "src/", "src/new-file.rs",
    "missing/dir/file", "sub/deeper/file.txt", "sub/deeper/up3/src/main.rs", "sub/back/main.rs",
    ".git/hooks/pre-commit", ".git/config", "fifo", "..", "../env.sh", "../scripts/build.sh",
    "../ws/README.md", "../../outside/data.txt", "../../../../../../etc/passwd",
    "../../other/lib.rs", "src/main.rs/", "README.md/x", "missing/../README.md",
    "link-etc/passwd", "link-ssh/id_rsa", "link-main", "link-main/", "link-src-abs/lib.rs",
    "link-sub/file.txt", "link-up/env.sh", "link-up/ws/src", "link-out/data.txt", "link-outfile",
    "link-other/lib.rs", "link-other/link-back/src", "link-other/link-home/.ssh",
    "link-dangling", "link-proc/etc/passwd", "link-root/etc", "loop-a", "self-loop/x",
    "chain-1/deeper/file.txt", "src/to-main", "/etc/passwd", "/proc/self/environ",
    "/proc/self/cwd/README.md", "/proc/self/root/etc/shadow", "/dev/fd/0", "/sys/kernel",
    "/workspace/ws/src/main.rs", "/workspace/../etc", "/workspaces/other/lib.rs",
    "/workspaces/other/../../workspace/env.sh", "/tmp", "/", ".", "./", "//", "a//b/./c/..",
    "~/.ssh/id_rsa", "$HOME/.bashrc", "{WS}/src/main.rs", "{WS}/link-src-abs/lib.rs", "{BASE}/tree",
    "{BASE}/tree/env.sh", "{BASE}/outside/data.txt", "{BASE}/home/.ssh/id_rsa", "{OTHER}/lib.rs",
    "{OTHER}/../tree/ws/README.md", "{WS}/../../outside", "{WS}/link-etc/hostname", "src/\u00e9t\u00e9.rs", "x" * 300, "a/" * 100,
]


def reset(d: Path) -> Path:
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    return d


def safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[:60]


def tldr_clean(command: str) -> str:
    command = re.sub(r"\{\{\[([^|\]]*)\|[^\]]*\]\}\}", r"\1", command)
    return re.sub(r"\{\{(.*?)\}\}", r"\1", command)


def main() -> None:
    out = reset(FUZZ / "seeds" / "classify_script")
    n = 0
    for line in (TESTDATA / "redteam-public-cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        command = case.get("input")
        if isinstance(command, dict):
            command = command.get("command")
        if isinstance(command, str):
            (out / f"redteam-{safe(case['id'])}").write_text(command)
            n += 1
    for name, command in CLASSIFY_INLINE.items():
        (out / f"inline-{name}").write_text(command)
        n += 1
    by_page = {}
    for line in (TESTDATA / "tldr-commands.jsonl").read_text().splitlines():
        entry = json.loads(line)
        by_page.setdefault(entry["page"], []).append(entry["command"])
    rng = random.Random(20260101)
    for page in sorted(rng.sample(sorted(by_page), TLDR_SAMPLE)):
        command = tldr_clean(rng.choice(by_page[page]))
        (out / f"tldr-{safe(page)}").write_text(command)
        n += 1
    print(f"classify_script: {n} seeds")
    regressions = FUZZ / "regressions" / "classify_script"
    regressions.mkdir(parents=True, exist_ok=True)
    for name, command in CLASSIFY_REGRESSIONS.items():
        (regressions / name).write_text(command)
    print(f"classify_script: {len(CLASSIFY_REGRESSIONS)} regressions")

    out = reset(FUZZ / "seeds" / "resolve")
    paths = []
    for line in (TESTDATA / "redteam-public-cases.jsonl").read_text().splitlines():
        case = json.loads(line)
        if isinstance(case.get("input"), dict):
            path = case["input"].get("args", {}).get("path")
            if isinstance(path, str) and path not in paths:
                paths.append(path)
    paths += [p for p in RESOLVE_SEEDS if p not in paths]
    for i, path in enumerate(paths):
        (out / f"{i:03}-{safe(path) or 'slash'}").write_text(path)
    print(f"resolve: {len(paths)} seeds")


if __name__ == "__main__":
    main()

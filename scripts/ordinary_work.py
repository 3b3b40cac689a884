#!/usr/bin/env python3
"""Ordinary agent work through spear, compared with plain bash in a copy of a real project.

Usage: ordinary_work.py SPEAR_BINARY [--cache DIR] [--corpus-sample N] [--only SUBSTRING]
                        [--project NAME] [--limit N] [--timeout S] [--results FILE] [--quiet]

Every command runs in a workspace that is, before each run, the project's pristine tree (a git
repository with one commit): once with the baseline shell, once through `spear exec --auto -c`,
and, when the baseline changed nothing in the workspace, once through `spear exec --safe -c`.
The outcome compared is the exit code and the stdout, normalised for what must differ (the
workspace and home paths, temporary names, durations).

The baseline is `bash -o pipefail -c SCRIPT`, which is how spear itself runs `-c` scripts and
what makes `false | cat` and `grep x missing | wc -l` fail as issue 13 requires; but a pipeline
whose producer was ended by SIGPIPE because a later stage stopped reading is no failure (issue 13,
item 1), so when the pipefail run exits 141 the baseline is plain `bash -c SCRIPT` instead (its
status is the last stage's, and `cat big.txt | head -3` exits 0).

The baseline runs with a private, empty /tmp (`bwrap --dev-bind / / --tmpfs /tmp`, nothing else
changed), as the sandbox has, so that a command writing /tmp/t changes nothing on the host. Both sides get a
fresh HOME holding only a ~/.gitconfig with a user name and email (the identity the host gives).

Commands come from testdata/ordinary_work/commands.txt (written from what coding agents run every
day) and from a seeded sample of ../shared/corpora/agent-commands.jsonl (commands real agents ran
in Django, sympy and astropy checkouts; `{WS}` is the workspace). Commands that need the network or
change the host are excluded and listed with the reason.

Projects are cached under ~/.cache/spear-bench (--cache): Django 5.0 and sympy 1.12 from their
PyPI source distributions, astropy 6.0.0 from its wheel (its sdist builds numpy from source to
prepare metadata), the `itoa` crate from cargo's registry, and testdata/ordinary_work/calc.
"""
import argparse
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMMANDS = REPO / "testdata" / "ordinary_work" / "commands.txt"
CALC = REPO / "testdata" / "ordinary_work" / "calc"
CORPUS = REPO.parent / "shared" / "corpora" / "agent-commands.jsonl"
if not CORPUS.exists():
    CORPUS = Path("/work/shared/corpora/agent-commands.jsonl")
WS_BASE = Path("/var/tmp/spear-bench")
IDENTITY = "[user]\n\tname = Bench User\n\temail = bench@example.invalid\n"
PYPI = {"django": ("Django-5.0.tar.gz", ["django==5.0"], "--no-binary"),
        "sympy": ("sympy-1.12.tar.gz", ["sympy==1.12"], "--no-binary"),
        "astropy": ("astropy-6.0.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                    ["astropy==6.0.0"], "--only-binary")}

# What needs the network or changes the host: excluded, with the reason.
EXCLUDE = [
    (re.compile(r"\b(pip3?|python3?\s+-m\s+pip)\s+(install|uninstall|download)\b"),
     "installs packages from the network"),
    (re.compile(r"\b(sudo|su)\s"), "changes privileges on the host"),
    (re.compile(r"\bapt(-get)?\s"), "installs host packages"),
    (re.compile(r"\b(curl|wget)\b"), "needs the network"),
    (re.compile(r"\bgit\s+(clone|fetch|pull|push|submodule)\b"), "needs the network"),
    (re.compile(r"\b(npm|yarn|pnpm)\s+(install|i|ci|add)\b"), "installs packages from the network"),
    (re.compile(r"\b(conda|docker|ssh|systemctl)\b"), "changes the host or needs the network"),
]


def run(argv, **kw):
    return subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def git_commit_all(tree):
    env = dict(os.environ, GIT_AUTHOR_NAME="Bench", GIT_AUTHOR_EMAIL="bench@example.invalid",
               GIT_COMMITTER_NAME="Bench", GIT_COMMITTER_EMAIL="bench@example.invalid",
               GIT_AUTHOR_DATE="2024-01-01T00:00:00Z", GIT_COMMITTER_DATE="2024-01-01T00:00:00Z")
    run(["git", "-c", "init.defaultBranch=main", "init", "-q", str(tree)], env=env)
    run(["git", "-C", str(tree), "add", "-A", "-f"], env=env)
    run(["git", "-C", str(tree), "commit", "-q", "-m", "pristine"], env=env)


def prepare_project(name, cache):
    """The project's pristine tree in the cache (made once): a git repository with one commit."""
    dest = cache / "projects" / name
    if (dest / ".git").exists():
        return dest
    shutil.rmtree(dest, ignore_errors=True)
    tmp = cache / "projects" / (name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    if name == "calc":
        shutil.copytree(CALC, tmp, dirs_exist_ok=True)
        (tmp / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 200001)))
    elif name == "itoa":
        found = sorted(Path.home().glob(".cargo/registry/src/*/itoa-1.*"))
        if not found:
            raise RuntimeError("no itoa-1.* under ~/.cargo/registry/src")
        shutil.copytree(found[-1], tmp, dirs_exist_ok=True)
    else:
        file, spec, binary = PYPI[name]
        dl = cache / "dl"
        dl.mkdir(parents=True, exist_ok=True)
        if not (dl / file).exists():
            run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", binary, ":all:",
                 "-d", str(dl), *spec])
        if file.endswith(".whl"):
            with zipfile.ZipFile(dl / file) as z:
                z.extractall(tmp)
        else:
            with tarfile.open(dl / file) as t:
                t.extractall(tmp, filter="data")
            (top,) = list(tmp.iterdir())
            for entry in top.iterdir():
                entry.rename(tmp / entry.name)
            top.rmdir()
    git_commit_all(tmp)
    tmp.rename(dest)
    return dest


class Workspace:
    """One working copy of a project, reset to the pristine commit whenever a run changed it."""

    def __init__(self, name, pristine):
        self.path = WS_BASE / name
        self.pristine = pristine
        self.git_snapshot = WS_BASE / (name + ".git")
        if not (self.path / ".git").exists() or not self.git_snapshot.exists():
            shutil.rmtree(self.path, ignore_errors=True)
            shutil.rmtree(self.git_snapshot, ignore_errors=True)
            WS_BASE.mkdir(parents=True, exist_ok=True)
            run(["cp", "-a", str(pristine), str(self.path)])
            run(["git", "-C", str(self.path), "status", "--short"])  # refresh the index once
            run(["cp", "-a", str(self.path / ".git"), str(self.git_snapshot)])
        self.reset()

    def reset(self):
        shutil.rmtree(self.path / ".git")
        run(["cp", "-a", str(self.git_snapshot), str(self.path / ".git")])
        run(["git", "-C", str(self.path), "reset", "-q", "--hard"])
        run(["git", "-C", str(self.path), "clean", "-q", "-ffdx"])
        self.clean = self.fingerprint()

    def fingerprint(self):
        """A digest of every entry's name, mode, size, mtime and link target (the index by its
        staged content, since `git status` rewrites its stat cache)."""
        h = hashlib.sha256()
        root = str(self.path)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for n in sorted(filenames) + dirnames:
                p = os.path.join(dirpath, n)
                rel = p[len(root):]
                if rel == "/.git/index":
                    continue
                try:
                    st = os.lstat(p)
                except FileNotFoundError:
                    continue
                link = os.readlink(p) if os.path.islink(p) else ""
                h.update(f"{rel}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{link}\n".encode())
        staged = subprocess.run(["git", "-C", root, "ls-files", "-s"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL)
        h.update(staged.stdout)
        return h.hexdigest()

    def ensure_clean(self):
        if self.fingerprint() != self.clean:
            self.reset()


def parse_commands(text):
    """(project, command, view_only) for each command of commands.txt."""
    out, project, lines = [], None, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("@"):
            project = line[1:].strip()
            continue
        cmd = [line]
        while cmd[-1].endswith("\\") and i < len(lines):
            cmd.append(lines[i])
            i += 1
        m = re.search(r"<<-?\s*['\"]?([A-Za-z_]+)['\"]?", "\n".join(cmd))
        if m:
            while i < len(lines):
                cmd.append(lines[i])
                i += 1
                if cmd[-1].strip() == m.group(1):
                    break
        joined = "\n".join(cmd)
        if joined.count('"') % 2 and not m:  # a quoted string spanning lines
            while i < len(lines):
                cmd.append(lines[i])
                i += 1
                joined = "\n".join(cmd)
                if joined.count('"') % 2 == 0:
                    break
        view = joined.startswith("view: ")
        out.append((project, joined[len("view: "):] if view else joined, view))
    return out


def corpus_sample(n, seed=13):
    rows = [json.loads(line) for line in CORPUS.open()]
    pick = [r for r in rows if r["instance"].split("__")[0] in ("django", "sympy", "astropy")]
    random.Random(seed).shuffle(pick)
    return pick[:n]


def excluded(cmd):
    for pattern, why in EXCLUDE:
        if pattern.search(cmd):
            return why
    return None


DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|sec|seconds?)\b|(?<=duration_ms )\d+(\.\d+)?")
TEMPNAME = re.compile(r"/tmp/(tmp\.[A-Za-z0-9]{10}|tmp[a-z0-9_]{8})")


LS_LONG = re.compile(r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s")


def normalise(text, ws, home):
    """Replaces what must differ: the workspace and home paths, temporary names, durations; and in
    `ls -l` listings the entry of the workspace's parent (`..`, the sandbox's own directory), the
    `total` line that counts it and the column widths it sets."""
    text = text.replace(str(ws), "{WS}").replace("/workspace", "{WS}").replace(str(home), "{HOME}")
    text = TEMPNAME.sub("/tmp/{TMP}", text)
    text = DURATION.sub("{T}", text)
    if LS_LONG.search(text.split("\n", 2)[1] if text.startswith("total ") and "\n" in text
                      else ""):
        lines = []
        for line in text.split("\n"):
            if line.startswith("total ") or (LS_LONG.match(line) and line.endswith(" ..")):
                continue
            lines.append(re.sub(r" +", " ", line) if LS_LONG.match(line) else line)
        text = "\n".join(lines)
    return text


def env_for(home):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8",
           "USER": os.environ.get("USER", "root"), "LOGNAME": os.environ.get("USER", "root")}
    for name in ("CARGO_HOME", "RUSTUP_HOME", "PYENV_ROOT"):
        if name in os.environ:
            env[name] = os.environ[name]
    real_home = Path(os.path.expanduser("~"))
    env.setdefault("CARGO_HOME", str(real_home / ".cargo"))
    env.setdefault("RUSTUP_HOME", str(real_home / ".rustup"))
    return env


def fresh_home():
    home = Path(tempfile.mkdtemp(prefix="home.", dir=WS_BASE))
    (home / ".gitconfig").write_text(IDENTITY)
    return home


def run_bash(script, ws, timeout, pipefail=True):
    home = fresh_home()
    argv = ["bash", "-o", "pipefail", "-c", script] if pipefail else ["bash", "-c", script]
    argv = ["bwrap", "--dev-bind", "/", "/", "--tmpfs", "/tmp", "--", *argv]
    env = dict(env_for(home), TMPDIR="/tmp")  # the sandbox's TMPDIR is its private /tmp too
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=ws, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
        code, out, err = done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode(
            errors="replace")
    except subprocess.TimeoutExpired:
        code, out, err = "timeout", "", ""
    elapsed = time.perf_counter() - start
    result = {"exit": code, "stdout": normalise(out, ws, home), "stderr": err[-2000:],
              "seconds": elapsed}
    shutil.rmtree(home, ignore_errors=True)
    return result


def run_spear(spear, mode, script, ws, timeout):
    home = fresh_home()
    argv = [spear, "exec", f"--{mode}", "--json", "--workspace", str(ws), "--timeout",
            str(timeout), "-c", script]
    start = time.perf_counter()
    try:
        done = subprocess.run(argv, cwd=ws, env=env_for(home), stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        shutil.rmtree(home, ignore_errors=True)
        return {"exit": "timeout", "stdout": "", "status": "harness-timeout", "reason": "",
                "class": "", "seconds": time.perf_counter() - start}
    elapsed = time.perf_counter() - start
    try:
        v = json.loads(done.stdout)
        result = {"exit": v.get("exit_code"), "stdout": normalise(v.get("stdout") or "", ws, home),
                  "status": v.get("status"), "reason": v.get("reason") or "",
                  "class": v.get("class") or "", "stderr": (v.get("stderr") or "")[-2000:]}
    except ValueError:
        result = {"exit": done.returncode, "stdout": "", "status": "no-json",
                  "reason": done.stderr.decode(errors="replace")[-500:], "class": ""}
    result["seconds"] = elapsed
    shutil.rmtree(home, ignore_errors=True)
    return result


def same(a, b, view):
    return a["exit"] == b["exit"] and (view or a["stdout"] == b["stdout"])


def baseline(script, workspace, timeout):
    workspace.ensure_clean()
    base = run_bash(script, workspace.path, timeout)
    base["changed"] = workspace.fingerprint() != workspace.clean
    if base["exit"] == 141:
        workspace.ensure_clean()
        plain = run_bash(script, workspace.path, timeout, pipefail=False)
        plain["changed"] = base["changed"] or workspace.fingerprint() != workspace.clean
        plain["baseline"] = "plain bash (pipefail run exited 141: SIGPIPE)"
        base = plain
    return base


def measure(spear, item, workspace, timeout):
    script, view = item["command"], item["view"]
    base = baseline(script, workspace, timeout)
    if base["exit"] == "timeout":
        return dict(item, excluded=f"bash ran past the {timeout} s timeout")
    workspace.ensure_clean()
    auto = run_spear(spear, "auto", script, workspace.path, timeout)
    item = dict(item, bash=base, auto=auto, read_only=not base["changed"])
    others = []

    def matches(got):
        # A mismatch reruns bash (twice at most): when bash itself varies (a producer that loses
        # the race against `head`, a listing in hash order), spear's outcome counts as the same
        # if it equals any outcome bash gave.
        if same(base, got, view) or any(same(o, got, view) for o in others):
            return True
        while len(others) < 2:
            others.append(baseline(script, workspace, timeout))
            if same(others[-1], got, view):
                break
        if any(not same(o, base, view) for o in others):
            item["nondeterministic"] = [(o["exit"], o["stdout"][:200]) for o in others]
        return any(same(o, got, view) for o in others)

    item["auto_same"] = matches(auto)
    if item["read_only"]:
        workspace.ensure_clean()
        safe = run_spear(spear, "safe", script, workspace.path, timeout)
        item["safe"] = safe
        item["safe_same"] = matches(safe)
    return item


def describe(r, mode):
    s = r[mode]
    return (f"  [{r['project']}] {r['command'][:160]!r}\n"
            f"      bash: exit {r['bash']['exit']}  stdout {r['bash']['stdout'][:100]!r}\n"
            f"      spear --{mode}: status {s['status']} exit {s['exit']} class {s['class']}"
            f"  stdout {s['stdout'][:100]!r}\n      reason: {s['reason'][:300]!r}")


def cause(r, mode):
    s = r[mode]
    if s["status"] in ("denied", "cancelled") or s["exit"] == 126:
        return f"{s['status']}: {re.sub(r'`[^`]*`|/[^ ]*', '…', s['reason'])[:90]}"
    if s["exit"] != r["bash"]["exit"]:
        return f"{s['status']}: exit {s['exit']} where bash gave {r['bash']['exit']}"
    return f"{s['status']}: same exit, different stdout"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("spear")
    ap.add_argument("--cache", default=str(Path.home() / ".cache" / "spear-bench"))
    ap.add_argument("--corpus-sample", type=int, default=150)
    ap.add_argument("--only", default=None, help="run only commands containing this")
    ap.add_argument("--project", default=None,
                    help="run only the commands of this project (calc, django, sympy, astropy, itoa)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--results", default=None, help="write every result as JSON lines here")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    args = ap.parse_args()
    spear = str(Path(args.spear).resolve())
    cache = Path(args.cache).expanduser()

    items, skipped = [], []
    for project, command, view in parse_commands(COMMANDS.read_text()):
        items.append({"source": "commands.txt", "project": project, "command": command,
                      "view": view})
    for row in corpus_sample(args.corpus_sample):
        project = row["instance"].split("__")[0]
        item = {"source": row["id"], "project": project, "view": False,
                "command": row["command"]}
        why = excluded(row["command"])
        if why:
            skipped.append((item, why))
        else:
            items.append(item)
    if args.only:
        items = [i for i in items if args.only in i["command"]]
    if args.project:
        items = [i for i in items if i["project"] == args.project]
    if args.limit:
        items = items[:args.limit]

    WS_BASE.mkdir(parents=True, exist_ok=True)
    lock = open(WS_BASE / ".lock", "w")  # one run at a time: the workspaces are shared
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        sys.exit(f"another ordinary_work.py run holds {WS_BASE / '.lock'}")
    workspaces = {}
    results = []
    out = open(args.results, "w") if args.results else None  # written as it goes: a cut run counts
    started = time.perf_counter()
    for n, item in enumerate(items, 1):
        name = item["project"]
        if name not in workspaces:
            workspaces[name] = Workspace(name, prepare_project(name, cache))
        ws = workspaces[name]
        item = dict(item, command=item["command"].replace("{WS}", str(ws.path)))
        r = measure(spear, item, ws, args.timeout)
        if "excluded" in r:
            skipped.append((r, r["excluded"]))
            continue
        results.append(r)
        if out:
            out.write(json.dumps(r) + "\n")
            out.flush()
        if not args.quiet and not r["auto_same"]:
            print(f"[{n}/{len(items)}] AUTO differs:\n{describe(r, 'auto')}", flush=True)
        if not args.quiet and r["read_only"] and not r["safe_same"]:
            print(f"[{n}/{len(items)}] SAFE differs:\n{describe(r, 'safe')}", flush=True)
    for ws in workspaces.values():
        ws.ensure_clean()

    if out:
        out.close()

    total = len(results)
    auto_same = sum(r["auto_same"] for r in results)
    ro = [r for r in results if r["read_only"]]
    safe_ran = sum(r["safe"]["status"] not in ("denied", "cancelled") for r in ro)
    safe_same = sum(r["safe_same"] for r in ro)
    bash_ok = sum(r["bash"]["exit"] == 0 for r in results)
    t_bash = sum(r["bash"]["seconds"] for r in results)
    t_auto = sum(r["auto"]["seconds"] for r in results)
    print()
    print(f"ordinary work: {total} commands ({sum(r['source'] == 'commands.txt' for r in results)}"
          f" from commands.txt, {sum(r['source'] != 'commands.txt' for r in results)} from the "
          f"agent corpus); bash exits 0 on {bash_ok}; {len(skipped)} excluded; "
          f"{time.perf_counter() - started:.0f} s")
    print(f"AUTO: same outcome as bash: {auto_same}/{total} = {100 * auto_same / max(total, 1):.1f}%"
          " (aim: 99%)")
    print(f"SAFE: read-only commands (bash changed nothing): {len(ro)}; run in SAFE: {safe_ran}/"
          f"{len(ro)} = {100 * safe_ran / max(len(ro), 1):.1f}%; same outcome: {safe_same}/{len(ro)}"
          f" = {100 * safe_same / max(len(ro), 1):.1f}% (aim: 100%)")
    print(f"time: spear --auto {t_auto:.1f} s against bash {t_bash:.1f} s, ratio "
          f"{t_auto / max(t_bash, 1e-9):.2f}x (for information)")
    groups = {}
    for r in results:
        if not r["auto_same"]:
            groups.setdefault(("AUTO", cause(r, "auto")), []).append(r)
        if r["read_only"] and not r["safe_same"]:
            groups.setdefault(("SAFE", cause(r, "safe")), []).append(r)
    if groups:
        print("\ndifferences by cause:")
        for (mode, why), rs in sorted(groups.items(), key=lambda kv: -len(kv[1])):
            examples = "; ".join(repr(r["command"][:60]) for r in rs[:3])
            print(f"  {mode} {len(rs):4d}  {why}\n          e.g. {examples}")
    if skipped:
        print("\nexcluded:")
        for item, why in skipped:
            print(f"  {item['source']}: {item['command'][:90]!r}: {why}")


if __name__ == "__main__":
    main()

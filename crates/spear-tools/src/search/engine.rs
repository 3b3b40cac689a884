//! The walk and the search of each file: the effects of [`super::search`].
//!
//! The `ignore` crate's parallel walker lists directories (by host path, links not followed) with
//! all of its own filters off: it would open ignore files by name, and a fifo planted as
//! `.gitignore` hangs it (ripgrep hangs the same way). Instead, each directory's ignore files are
//! read here, through [`WorkspaceFs::open_file`], when the walker visits the directory, before its
//! entries are filtered; the verdicts come from [`super::rules`], the decisions from
//! [`super::filter`]. Every file is opened through the same layer.

use std::collections::{BTreeSet, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder};
use ignore::{DirEntry, WalkBuilder, WalkState};
use spear_workspace::{FsError, Location, Workspace, WorkspaceFs};

use super::filter::{GlobFilter, Kind, admit};
use super::model::{
    MAX_FILE_BYTES, MAX_IGNORE_FILE_BYTES, MAX_SKIPPED, SearchError, SearchMatch, SearchOutput,
};
use super::rules::{DirRules, Level, Verdict};
use super::sink::{Budget, Collect, Hit};

/// The rules in force in each directory visited so far, by host path.
type Levels = RwLock<HashMap<PathBuf, Arc<Level>>>;

/// The matcher ripgrep would build for `pattern` without flags other than `-i`: `^` and `$` at
/// line boundaries, never matching across a line (a pattern that needs `\n` is an error).
pub(super) fn build_matcher(
    pattern: &str,
    case_insensitive: bool,
) -> Result<RegexMatcher, SearchError> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .octal(false)
        .case_insensitive(case_insensitive)
        .line_terminator(Some(b'\n'))
        .ban_byte(Some(b'\0'))
        .build(pattern)
        .map_err(|e| SearchError::BadPattern {
            pattern: pattern.to_owned(),
            reason: e.to_string().trim().replace('\n', " "),
        })
}

/// The searcher of one thread: line numbers, and a binary file (a NUL byte) ends its search, as
/// ripgrep does for files it finds by walking.
fn searcher() -> Searcher {
    SearcherBuilder::new()
        .line_terminator(LineTerminator::byte(b'\n'))
        .line_number(true)
        .binary_detection(BinaryDetection::quit(b'\0'))
        .build()
}

/// Searches the tree at `start` (a file or a directory).
pub(super) fn run(
    ws: &Workspace,
    fs: &WorkspaceFs,
    start: &Location,
    matcher: &RegexMatcher,
    glob: Option<GlobFilter>,
    max_results: usize,
) -> Result<SearchOutput, SearchError> {
    let root_host = ws.roots()[start.root].host_path().to_path_buf();
    let start_host = ws.host_path(start);
    let search = Search {
        ws,
        fs,
        root: start.root,
        root_host: root_host.clone(),
        levels: Arc::new(RwLock::new(HashMap::new())),
        budget: Budget::new(max_results),
        files: AtomicUsize::new(0),
        found: Mutex::new(Vec::new()),
        notes: Mutex::new(Notes::default()),
        fatal: Mutex::new(None),
        stop: AtomicBool::new(false),
    };
    search.prepare_levels(start, &start_host);
    if let Some(e) = take(&search.fatal) {
        return Err(e.into());
    }

    let mut builder = WalkBuilder::new(&start_host);
    // Attack: a symlink to a directory outside; never followed (the filter drops every link).
    builder.standard_filters(false).follow_links(false);
    let levels = Arc::clone(&search.levels);
    let walk_start = start_host.clone();
    builder.filter_entry(move |dent| keep(dent, &levels, glob.as_ref(), &walk_start, &root_host));
    builder.build_parallel().run(|| {
        let mut searcher = searcher();
        let matcher = matcher.clone();
        let search = &search;
        Box::new(move |entry| search.visit(entry, &mut searcher, &matcher))
    });

    if let Some(e) = take(&search.fatal) {
        return Err(e.into());
    }
    Ok(search.finish())
}

/// Whether the walker keeps an entry below the start (a directory kept is descended into).
fn keep(
    dent: &DirEntry,
    levels: &Levels,
    glob: Option<&GlobFilter>,
    start: &Path,
    root: &Path,
) -> bool {
    let kind = kind_of(dent);
    let name = dent.file_name();
    let path = dent.path();
    if !matches!(kind, Kind::File | Kind::Dir) {
        return admit(kind, name, Verdict::None, false);
    }
    let verdict = {
        let levels = levels.read().unwrap_or_else(PoisonError::into_inner);
        // Fail closed: a directory whose rules were not read has none of its entries searched.
        let Some(level) = path.parent().and_then(|p| levels.get(p)) else {
            return false;
        };
        level.verdict(path, kind == Kind::Dir)
    };
    let glob_ok = kind == Kind::Dir
        || glob.is_none_or(|g| {
            g.admits(
                name,
                path.strip_prefix(start).unwrap_or(path),
                path.strip_prefix(root).unwrap_or(path),
            )
        });
    admit(kind, name, verdict, glob_ok)
}

/// The kind of a walked entry, links not followed.
fn kind_of(dent: &DirEntry) -> Kind {
    match dent.file_type() {
        Some(t) if t.is_symlink() => Kind::Symlink,
        Some(t) if t.is_dir() => Kind::Dir,
        Some(t) if t.is_file() => Kind::File,
        _ => Kind::Other,
    }
}

/// Takes what a mutex holds, poisoned or not.
fn take<T>(m: &Mutex<Option<T>>) -> Option<T> {
    m.lock().unwrap_or_else(PoisonError::into_inner).take()
}

/// What was being opened when the file layer refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// A file to search.
    File,
    /// An ignore file.
    Rules,
}

/// Files that were not searched, bounded.
#[derive(Debug, Default)]
struct Notes {
    named: BTreeSet<String>,
    more: usize,
}

/// The state of one search, shared by the walker's threads.
struct Search<'a> {
    ws: &'a Workspace,
    fs: &'a WorkspaceFs,
    root: usize,
    root_host: PathBuf,
    levels: Arc<Levels>,
    budget: Budget,
    files: AtomicUsize,
    found: Mutex<Vec<(PathBuf, Vec<Hit>)>>,
    notes: Mutex<Notes>,
    fatal: Mutex<Option<FsError>>,
    stop: AtomicBool,
}

impl Search<'_> {
    /// Reads the rules of every directory from the root down to `start` (its parent when it is a
    /// file), so that the first entries walked are judged by all of them. Whether an ancestor of
    /// the root is a repository is only looked up (`lstat` of `.git`); nothing outside the roots
    /// is read.
    fn prepare_levels(&self, start: &Location, start_host: &Path) {
        let outer_git = self
            .root_host
            .ancestors()
            .skip(1)
            .any(|dir| is_repository(dir).is_some());
        let mut level = Level::base(outer_git);
        let start_is_dir = std::fs::symlink_metadata(start_host).is_ok_and(|m| m.is_dir());
        let mut dirs: Vec<PathBuf> = vec![PathBuf::new()];
        let mut rel = PathBuf::new();
        for component in &start.rel {
            rel.push(component);
            dirs.push(rel.clone());
        }
        if !start_is_dir {
            dirs.pop();
        }
        let mut levels = self.levels.write().unwrap_or_else(PoisonError::into_inner);
        for rel in dirs {
            let host = self.root_host.join(&rel);
            level = Level::child(&level, &host, &self.rules(&rel, &host));
            levels.insert(host, Arc::clone(&level));
        }
    }

    /// One entry from the walker.
    fn visit(
        &self,
        entry: Result<DirEntry, ignore::Error>,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
    ) -> WalkState {
        if self.stop.load(Ordering::Relaxed) {
            return WalkState::Quit;
        }
        let dent = match entry {
            Ok(dent) => dent,
            Err(e) => {
                self.walk_error(&e);
                return WalkState::Continue;
            }
        };
        match kind_of(&dent) {
            // The start's own rules were read by `prepare_levels`.
            Kind::Dir if dent.depth() == 0 => WalkState::Continue,
            Kind::Dir => self.enter(dent.path()),
            Kind::File => self.search_file(dent.path(), searcher, matcher),
            // Only the start can get here (the filter drops links and others below it): a start
            // swapped for a link since it was resolved is not followed.
            Kind::Symlink | Kind::Other => WalkState::Continue,
        }
    }

    /// Reads the rules of the directory at `host` before the walker filters its entries.
    fn enter(&self, host: &Path) -> WalkState {
        let Some(parent) = host.parent().and_then(|p| {
            let levels = self.levels.read().unwrap_or_else(PoisonError::into_inner);
            levels.get(p).cloned()
        }) else {
            return WalkState::Skip;
        };
        let Ok(rel) = host.strip_prefix(&self.root_host) else {
            return WalkState::Skip;
        };
        let level = Level::child(&parent, host, &self.rules(rel, host));
        self.levels
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(host.to_path_buf(), level);
        self.state()
    }

    /// The ignore files of the directory `rel` (at `host`), read beneath the root.
    fn rules(&self, rel: &Path, host: &Path) -> DirRules {
        let git = is_repository(host);
        DirRules {
            ignore: self.read_rules(rel.join(".ignore")),
            gitignore: self.read_rules(rel.join(".gitignore")),
            exclude: if git == Some(true) {
                self.read_rules(rel.join(".git/info/exclude"))
            } else {
                None
            },
            has_git: git.is_some(),
        }
    }

    /// The text of one ignore file; `None` when there is none or it cannot be used (noted).
    fn read_rules(&self, rel: PathBuf) -> Option<String> {
        let loc = Location {
            root: self.root,
            rel,
        };
        let (file, size) = match self.fs.open_file(&loc) {
            Ok(opened) => opened,
            Err(FsError::NotFound { .. }) => return None,
            Err(e) => {
                self.fs_error(&loc, e, Opened::Rules);
                return None;
            }
        };
        let mut bytes = Vec::new();
        let read = file.take(MAX_IGNORE_FILE_BYTES + 1).read_to_end(&mut bytes);
        if size > MAX_IGNORE_FILE_BYTES || bytes.len() as u64 > MAX_IGNORE_FILE_BYTES {
            self.note(format!(
                "{}: larger than {} KiB, its rules were not applied",
                self.ws.label(&loc),
                MAX_IGNORE_FILE_BYTES >> 10
            ));
            return None;
        }
        if let Err(e) = read {
            self.note(format!(
                "{}: {e}, its rules were not applied",
                self.ws.label(&loc)
            ));
            return None;
        }
        Some(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// Searches the file at `host` (walked from the root, so it lies below it).
    fn search_file(
        &self,
        host: &Path,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
    ) -> WalkState {
        let Ok(rel) = host.strip_prefix(&self.root_host) else {
            return WalkState::Continue;
        };
        let loc = Location {
            root: self.root,
            rel: rel.to_path_buf(),
        };
        // Attack: the file, or a directory above it, swapped for a link to `~/.ssh` since the
        // walker listed it. The open is beneath the root fd, so the kernel refuses the escape.
        let (file, size) = match self.fs.open_file(&loc) {
            Ok(opened) => opened,
            Err(e) => {
                self.fs_error(&loc, e, Opened::File);
                return self.state();
            }
        };
        // Attack: a huge (or endlessly growing) file must not hold the search; the cap on the
        // reader bounds even a file that grows after it was measured.
        if size > MAX_FILE_BYTES {
            self.note(format!(
                "{}: larger than {} MiB",
                self.ws.label(&loc),
                MAX_FILE_BYTES >> 20
            ));
            return WalkState::Continue;
        }
        self.files.fetch_add(1, Ordering::Relaxed);
        let mut hits = Vec::new();
        let sink = Collect {
            budget: &self.budget,
            hits: &mut hits,
        };
        if let Err(e) = searcher.search_reader(matcher, file.take(MAX_FILE_BYTES), sink) {
            self.note(format!("{}: {e}", self.ws.label(&loc)));
        }
        if !hits.is_empty() {
            self.found
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push((loc.rel, hits));
        }
        self.state()
    }

    /// Quit once the budget is exceeded or the file layer failed.
    fn state(&self) -> WalkState {
        if self.budget.exceeded() {
            self.stop.store(true, Ordering::Relaxed);
        }
        if self.stop.load(Ordering::Relaxed) {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }

    /// Notes why `loc` could not be opened; a file layer that cannot work stops the search.
    fn fs_error(&self, loc: &Location, e: FsError, what: Opened) {
        let consequence = match what {
            Opened::File => "not searched",
            Opened::Rules => "its rules were not applied",
        };
        match e {
            // Vanished since it was listed: as if never there.
            FsError::NotFound { .. } => {}
            FsError::Openat2Unavailable => {
                self.stop.store(true, Ordering::Relaxed);
                *self.fatal.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
            }
            // An ignore file's name is ours: it can be named.
            FsError::Escape { .. } if what == Opened::Rules => self.note(format!(
                "{}: leads outside the workspace; {consequence}",
                self.ws.label(loc)
            )),
            // Named by its directory: the entry's own name may be one listed outside.
            FsError::Escape { .. } => {
                let dir = Location {
                    root: loc.root,
                    rel: loc.rel.parent().map(Path::to_path_buf).unwrap_or_default(),
                };
                self.note(format!(
                    "{}: changed during the search and now leads outside the workspace; not \
                     searched",
                    self.ws.label(&dir)
                ));
            }
            other => self.note(format!("{other}; {consequence}")),
        }
    }

    /// Notes a directory the walker could not list.
    fn walk_error(&self, e: &ignore::Error) {
        let (path, reason) = error_parts(e);
        let label = path
            .and_then(|p| p.strip_prefix(&self.root_host).ok())
            .map_or_else(
                || "a directory".to_owned(),
                |rel| {
                    self.ws.label(&Location {
                        root: self.root,
                        rel: rel.to_path_buf(),
                    })
                },
            );
        self.note(format!("{label}: {reason}"));
    }

    fn note(&self, note: String) {
        let mut notes = self.notes.lock().unwrap_or_else(PoisonError::into_inner);
        if notes.named.len() < MAX_SKIPPED {
            notes.named.insert(note);
        } else if !notes.named.contains(&note) {
            notes.more += 1;
        }
    }

    /// The output: matches sorted by path, then line, with their labels.
    fn finish(self) -> SearchOutput {
        let mut found = self
            .found
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        found.sort_by(|a, b| a.0.cmp(&b.0));
        let mut matches = Vec::with_capacity(found.iter().map(|(_, h)| h.len()).sum());
        for (rel, hits) in found {
            let path = self.ws.label(&Location {
                root: self.root,
                rel,
            });
            // A file's hits come in line order from the searcher.
            matches.extend(hits.into_iter().map(|(line, text)| SearchMatch {
                path: path.clone(),
                line,
                text,
            }));
        }
        let notes = self
            .notes
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut skipped: Vec<String> = notes.named.into_iter().collect();
        if notes.more > 0 {
            skipped.push(format!("and {} more", notes.more));
        }
        SearchOutput {
            matches,
            truncated: self.budget.exceeded(),
            files_searched: self.files.into_inner(),
            skipped,
        }
    }
}

/// Whether `dir` is the top of a repository: `Some(true)` for a `.git` directory, `Some(false)` for
/// a `.git` file (a worktree; its exclude file lives elsewhere and is not read) or a `.jj`
/// directory. Only looked up, never followed.
fn is_repository(dir: &Path) -> Option<bool> {
    match std::fs::symlink_metadata(dir.join(".git")) {
        Ok(meta) => Some(meta.is_dir()),
        Err(_) => std::fs::symlink_metadata(dir.join(".jj"))
            .ok()
            .map(|_| false),
    }
}

/// The path an error of the walker is about, and the underlying reason.
fn error_parts(e: &ignore::Error) -> (Option<&Path>, String) {
    match e {
        ignore::Error::WithPath { path, err } => (Some(path), error_parts(err).1),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_parts(err)
        }
        other => (None, other.to_string()),
    }
}

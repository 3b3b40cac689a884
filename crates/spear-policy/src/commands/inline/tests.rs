use super::*;

fn r(p: &str) -> Effect {
    Effect::Read(p.to_owned())
}

fn w(p: &str) -> Effect {
    Effect::Write(p.to_owned())
}

/// Real programs agents pass to `-c`/`-e`, and what they do with files.
#[test]
fn effects_of_real_programs() {
    let table: &[(Lang, &str, &[Effect])] = &[
        // Python: reads.
        (
            Lang::Python,
            "import json; print(json.load(open('data.json')))",
            &[r("data.json")],
        ),
        (
            Lang::Python,
            "print(open('setup.cfg', 'r').read())",
            &[r("setup.cfg")],
        ),
        (
            Lang::Python,
            "print(open(file='a.txt', mode='rb').read())",
            &[r("a.txt")],
        ),
        (
            Lang::Python,
            "f = open('x.txt', mode='rb'); print(f.read())",
            &[r("x.txt")],
        ),
        (
            Lang::Python,
            "from pathlib import Path; print(Path('pyproject.toml').read_text())",
            &[r("pyproject.toml")],
        ),
        (
            Lang::Python,
            "import pathlib; print(pathlib.Path('src').exists())",
            &[r("src")],
        ),
        (
            Lang::Python,
            "import os; print(os.listdir('src')); print(os.path.exists('/etc/hosts'))",
            &[r("src"), r("/etc/hosts")],
        ),
        (
            Lang::Python,
            "import glob; print(glob.glob('tests/*.py'))",
            &[r("tests/*.py")],
        ),
        (
            Lang::Python,
            "import pandas as pd; print(pd.read_csv('data/x.csv').head())",
            &[r("data/x.csv")],
        ),
        (
            Lang::Python,
            "import tomllib; print(tomllib.load(open('pyproject.toml', 'rb')))",
            &[r("pyproject.toml")],
        ),
        // Python: writes.
        (Lang::Python, "open('x','w').write('a')", &[w("x")]),
        (
            Lang::Python,
            "open('log.txt', 'a+').write('a')",
            &[w("log.txt")],
        ),
        (
            Lang::Python,
            "open('x.txt', mode).write('a')",
            &[w("x.txt")],
        ),
        (
            Lang::Python,
            "from pathlib import Path; Path('out.txt').write_text('a')",
            &[w("out.txt")],
        ),
        (
            Lang::Python,
            "Path('a.txt').open('w').write('x')",
            &[w("a.txt")],
        ),
        (
            Lang::Python,
            "Path('a.txt').rename('b.txt')",
            &[w("a.txt"), w("b.txt")],
        ),
        (
            Lang::Python,
            "import shutil; shutil.copy('a.py', 'b.py'); shutil.rmtree('build')",
            &[r("a.py"), w("b.py"), w("build")],
        ),
        (
            Lang::Python,
            "import os; os.remove('/etc/x')",
            &[w("/etc/x")],
        ),
        (
            Lang::Python,
            "import os; os.symlink('/etc/passwd', 'p')",
            &[w("p")],
        ),
        // Python: strings that are not paths.
        (
            Lang::Python,
            "path = '/admin/auth/foo'\nprint(resolve(path), 'a.b', '/x/y')",
            &[],
        ),
        (
            Lang::Python,
            "print('/'.join(['a', 'b']).replace('/', '.'))",
            &[],
        ),
        (
            Lang::Python,
            "s = 'a.txt'; print(s.replace('a.txt', 'b.txt'))",
            &[],
        ),
        (Lang::Python, "open(f'{d}/x.txt', 'w')", &[]),
        (Lang::Python, "open(os.path.join(d, 'x.txt'), 'w')", &[]),
        (Lang::Python, "# open('c.txt', 'w')\nprint(1)", &[]),
        // Node.
        (
            Lang::Node,
            "console.log(require('./package.json').version)",
            &[r("./package.json")],
        ),
        (
            Lang::Node,
            "const fs = require('fs'); const p = require('path')",
            &[],
        ),
        (
            Lang::Node,
            "const fs=require('fs'); console.log(fs.readFileSync('package.json','utf8'))",
            &[r("package.json")],
        ),
        (
            Lang::Node,
            "require('fs').writeFileSync('/etc/x','')",
            &[w("/etc/x")],
        ),
        (
            Lang::Node,
            "fs.copyFileSync('a.js', 'b.js'); fs.openSync('c.txt', 'w'); fs.openSync('d.txt')",
            &[r("a.js"), w("b.js"), w("c.txt"), r("d.txt")],
        ),
        (Lang::Node, "import data from './d.json'", &[r("./d.json")]),
        (
            Lang::Node,
            "console.log('/api/v1/users'.replace('/', ''))",
            &[],
        ),
        (Lang::Node, "fs.writeFileSync(`${dir}/x`, '')", &[]),
        // Ruby.
        (Lang::Ruby, "puts File.read('Gemfile')", &[r("Gemfile")]),
        (
            Lang::Ruby,
            "File.write(\"~/.bashrc\", \"x\")",
            &[w("~/.bashrc")],
        ),
        (
            Lang::Ruby,
            "File.open('x.txt', 'w') { |f| f << 1 }",
            &[w("x.txt")],
        ),
        (
            Lang::Ruby,
            "require 'json'; puts JSON.parse(File.read 'a.json')",
            &[r("a.json")],
        ),
        (
            Lang::Ruby,
            "FileUtils.mkdir_p 'a/b'\nputs 'c/d'",
            &[w("a/b")],
        ),
        (
            Lang::Ruby,
            "FileUtils.cp('a.rb', 'b.rb')",
            &[r("a.rb"), w("b.rb")],
        ),
        // Perl.
        (Lang::Perl, "unlink \"/etc/passwd\"", &[w("/etc/passwd")]),
        (
            Lang::Perl,
            "open(my $fh, '<', 'in.txt') or die; open(OUT, '>', 'out.txt')",
            &[r("in.txt"), w("out.txt")],
        ),
        (
            Lang::Perl,
            "open(F, \">x.log\"); open(G, 'y.log')",
            &[w("x.log"), r("y.log")],
        ),
        (Lang::Perl, "open(P, 'ls |'); open(Q, '-|', 'ls')", &[]),
        (
            Lang::Perl,
            "print \"/usr/bin/x\\n\"; mkdir 'a' or die",
            &[w("a")],
        ),
        (Lang::Perl, "rename 'a', 'b' if -e 'a'", &[w("a"), w("b")]),
        // PHP.
        (
            Lang::Php,
            "echo file_get_contents('composer.json');",
            &[r("composer.json")],
        ),
        (
            Lang::Php,
            "file_put_contents('/etc/x', 'a');",
            &[w("/etc/x")],
        ),
        (Lang::Php, "$f = fopen('a.txt', 'w');", &[w("a.txt")]),
    ];
    for (lang, code, want) in table {
        assert_eq!(&file_effects(*lang, code), want, "{lang:?}: {code}");
    }
}

/// A Python keyword `mode=` decides even after a positional path; `file=` is not read as a path.
#[test]
fn python_keywords() {
    assert_eq!(
        file_effects(Lang::Python, "open('a', mode='w')"),
        vec![w("a")]
    );
    assert_eq!(
        file_effects(Lang::Python, "open('a', encoding='utf-8')"),
        vec![r("a")]
    );
    assert_eq!(
        file_effects(Lang::Python, "open('a', 'r', encoding='utf-8')"),
        vec![r("a")]
    );
}

/// Whatever the text, the scan ends and finds only what is a literal argument of a known call.
#[test]
fn never_fails() {
    for code in [
        "",
        "(((((",
        ")))",
        "open(",
        "open('a'",
        "Path(",
        "Path('a').",
        "'''",
        "\"\\",
        "`${",
        "open(,,,)",
        "fs.rename()",
    ] {
        for lang in [Lang::Python, Lang::Node, Lang::Ruby, Lang::Perl, Lang::Php] {
            let _ = file_effects(lang, code);
        }
    }
}

"""ctest measured_blocks_rules: scripts/report/measured_blocks.py --check on a tiny git repository made here, where
tests/data/fingerprints.txt changes three times (then a family is only added). A bits block measured at the last fingerprint change (or after it) passes;
one measured before it fails, as do an unknown commit, a dirty tree and a block naming no commit; a timed block must
name a cpu but may be older; claims and table blocks take their commit from their text; a measured-looking table
outside any block is an error (a warning with --warn-unmarked); broken markers exit 2. Then (issue 46) a block naming
its families passes when another family's line moved and fails when its own did, a block without families fails on
any change, a page's record table is judged row by row, and claims blocks age with their page."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "measured_blocks.py")
sys.path.insert(0, HERE)
from measured_blocks import blocks, unmarked_tables  # noqa: E402


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def commit(repo, path, text, message):
    full = os.path.join(repo, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as f:
        f.write(text)
    git(repo, "add", path)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def check(repo, text, *extra):
    path = os.path.join(repo, "README.md")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([sys.executable, SCRIPT, "--check", "--root", repo, *extra, path], capture_output=True, text=True)
    return r.returncode, r.stderr


def measured(kind, c, cpu=None, body="| a | 1.5 | 2.5 |\n"):
    cpu_attr = f' cpu="{cpu}"' if cpu else ""
    return f'# x\n\n<!-- measured: kind={kind} commit={c}{cpu_attr} source="iclab run x.yaml" -->\n{body}<!-- /measured -->\n'


with tempfile.TemporaryDirectory(prefix="iclab_measured_") as repo:
    git(repo, "init", "-q")
    old = commit(repo, "tests/data/fingerprints.txt", "a 1\n", "fingerprints v1")
    between = commit(repo, "src.txt", "x\n", "code")
    fp = commit(repo, "tests/data/fingerprints.txt", "a 2\n", "fingerprints v2: bits changed")
    later = commit(repo, "src.txt", "y\n", "code after")

    rc, err = check(repo, measured("bits", fp[:7]))
    assert rc == 0, err                                                   # at the fingerprint commit
    assert check(repo, measured("bits", later))[0] == 0                   # a descendant
    rc, err = check(repo, measured("bits", between[:9]))
    assert rc == 1 and "bits moved since commit" in err and between[:9] in err and "'a 1'" in err, err  # before the change
    rc, err = check(repo, measured("bits", "0123456789abcdef"))
    assert rc == 1 and "unknown to git" in err, err
    rc, err = check(repo, measured("bits", fp[:7] + "-dirty"))
    assert rc == 1 and "dirty" in err, err
    rc, err = check(repo, '# x\n<!-- measured: kind=bits source="x" -->\n1\n<!-- /measured -->\n')
    assert rc == 1 and "names no commit" in err, err

    # timed: a cpu is required, the ancestry rule is not
    rc, err = check(repo, measured("timed", old[:7]))
    assert rc == 1 and "no cpu" in err, err
    assert check(repo, measured("timed", old[:7], cpu="AMD EPYC 7B13"))[0] == 0
    assert check(repo, measured("timed", "0123456789abcdef", cpu="x"))[0] == 1

    # claims and table blocks: the commit is in their text
    claims = "<!-- claims:quick -->\nGenerated … \"iclab reproduction: profile quick, commit {c}\"; do not edit.\n<!-- /claims:quick -->\n"
    assert check(repo, claims.format(c=fp[:7]))[0] == 0
    rc, err = check(repo, claims.format(c=old[:7]))
    assert rc == 1 and "claims:quick block" in err, err
    assert check(repo, claims.format(c=old[:7]), "--exclude-marker", "claims:quick")[0] == 0   # left unchecked
    table = "<!-- table: run=sweeps/x dataset=/tables/t -->\n{caption}\n| a | b |\n<!-- /table -->\n"
    assert check(repo, table.format(caption=f"Run x, commit {later[:12]}, AVX2."))[0] == 0
    assert check(repo, table.format(caption=f"Run x, commit {later[:12]} (dirty), AVX2."))[0] == 1
    timed_table = "<!-- table: run=sweeps/x dataset=/tables/t kind=timed -->\n{caption}\n| a | b |\n<!-- /table -->\n"
    assert check(repo, timed_table.format(caption=f"*… commit {old[:12]}, AMD EPYC 7B13, AVX2; do not edit.*"))[0] == 0
    rc, err = check(repo, timed_table.format(caption=f"*… commit {old[:12]}; no cpu*"))
    assert rc == 1 and "no cpu" in err, err
    rc, err = check(repo, table.format(caption="not generated yet"))
    assert rc == 1 and "table block: names no commit" in err, err

    # the threshold moves with the file: measured at `fp`, fine until the fingerprints change again
    newer = commit(repo, "tests/data/fingerprints.txt", "a 3\n", "fingerprints v3")
    rc, err = check(repo, measured("bits", later))
    assert rc == 1 and "'a 2' is not in the current file" in err, err
    # a commit that only adds lines (a new family) leaves every older number as it was: the threshold stays at `newer`
    added = commit(repo, "tests/data/fingerprints.txt", "a 3\nb 1\n", "fingerprints: family b added")
    assert check(repo, measured("bits", newer))[0] == 0

    # unmarked tables: an error, a warning with --warn-unmarked; a table in a block or a code fence is not listed
    loose = "# Results\n\nOur run gave:\n\n| seed | loss | acc |\n|---|---|---|\n| 0 | 0.51 | 0.998 |\n"
    rc, err = check(repo, loose, "--warn-unmarked")
    assert rc == 0 and "README.md:5: warning" in err and "1 unmarked" in err, err
    rc, err = check(repo, loose)
    assert rc == 1 and "README.md:5: error" in err, err
    assert unmarked_tables("# Usage\n\nOptions:\n\n| a | 1.5 | 2.5 |\n", []) == []          # no measured wording
    assert unmarked_tables("# Results\n\n```\n| a | 1.5 | 2.5 |\n```\n", []) == []          # in a code fence
    assert unmarked_tables("# Results\n\n| a | 1 | 2 |\n", []) == []                        # integers only
    assert unmarked_tables("# Results\n\n| x | 000 §6.2 | Theorem 4.1 |\n", []) == []     # section numbers
    assert check(repo, measured("bits", newer, body=loose.split("\n\n", 2)[2]))[0] == 0     # inside a block: fine

    # a marker in a code fence or in inline code is an example of the syntax, not a block
    example = "# x\n\n```\n<!-- measured: kind=bits commit=abc source=x -->\n```\nuse `<!-- table: run=x -->` like so\n"
    assert blocks(example) == [] and check(repo, example)[0] == 0

    # broken markers: exit 2
    rc, err = check(repo, '# x\n<!-- measured: kind=bits commit=abc source="x" -->\n1\n')
    assert rc == 2 and "no <!-- /measured -->" in err, err
    assert check(repo, '<!-- measured: kind=speed commit=abc -->\n<!-- /measured -->\n')[0] == 2
    got = blocks('<!-- measured: kind=timed commit=abc1234 cpu="Intel Xeon (Cascade Lake)" source="a b" -->x<!-- /measured -->')
    assert got[0]["cpu"] == "Intel Xeon (Cascade Lake)" and got[0]["source"] == "a b" and got[0]["commit"] == "abc1234", got

    # a dataset added to a family changes its header line, not the bits of the others
    grown = commit(repo, "tests/data/fingerprints.txt", "family\ta\tH2\t2\na 3\na x\nb 1\n", "header")
    grown2 = commit(repo, "tests/data/fingerprints.txt", "family\ta\tH3\t3\na 3\na x\na y\nb 1\n", "dataset y added to a")
    rc, err = check(repo, measured("bits", newer))
    assert rc == 0, err                                                   # the threshold is still `newer`
    changed = commit(repo, "tests/data/fingerprints.txt", "family\ta\tH4\t3\na 3\na x2\na y\nb 1\n", "a's x moved")
    rc, err = check(repo, measured("bits", grown2))
    assert rc == 1 and "'a x' is not in the current file" in err, err
    # a change undone leaves the older blocks current (the rule compares lines, not history)
    commit(repo, "tests/data/fingerprints.txt", "family\ta\tH3\t3\na 3\na x\na y\nb 1\n", "a's x back")
    assert check(repo, measured("bits", grown2))[0] == 0
    # --threshold: the ancestry rule instead
    rc, err = check(repo, measured("bits", between), "--threshold", fp)
    assert rc == 1 and "the given threshold" in err, err


# Issue 46, a number judged by its own families: the first column of a line is its family. In a repository of its own,
# family b's line moves after `c1`; family a's stays.
def check_file(repo, rel, text):
    path = os.path.join(repo, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([sys.executable, SCRIPT, "--check", "--root", repo, path], capture_output=True, text=True)
    return r.returncode, r.stderr


def lines(b_hash):
    return (f"family\ta\tHA\t1\na\tx.h5:/d\tfloat32\t2\t1111\nfamily\tb\tH{b_hash}\t1\n"
            f"b\tx.h5:/d\tfloat32\t2\t{b_hash}\n")


def with_families(c, families):
    return (f'# x\n\n<!-- measured: kind=bits commit={c} families="{families}" source="iclab run a.yaml" -->\n'
            "| a | 1.5 | 2.5 |\n<!-- /measured -->\n")


def page(title_commit, rows):
    record = "".join(f"| {c} | {f} | {n} |\n" for c, f, n in rows)
    return (f"# iclab reproduction: profile quick, commit {title_commit}\n\nGenerated.\n\n## Machine and runs\n\n"
            f"| commit | fingerprint families | runs |\n|---|---|---|\n{record}\n")


with tempfile.TemporaryDirectory(prefix="iclab_measured_") as repo:
    git(repo, "init", "-q")
    c1 = commit(repo, "tests/data/fingerprints.txt", lines("2222"), "fingerprints v1")
    c2 = commit(repo, "tests/data/fingerprints.txt", lines("3333"), "family b's bits moved")
    assert check(repo, with_families(c1[:7], "a"))[0] == 0                       # b moved: a's numbers are current
    rc, err = check(repo, with_families(c1[:7], "a,b"))
    assert rc == 1 and f"README.md:3: measured block: the bits moved since commit {c1[:7]} (families a, b)" in err \
        and "'b\tx.h5:/d\tfloat32\t2\t2222'" in err, err                       # names block, commit, families, line
    rc, err = check(repo, measured("bits", c1[:7]))                              # no families: the global rule, kept
    assert rc == 1 and "(every family)" in err and "'b\tx.h5" in err, err
    assert check(repo, with_families(c2[:7], "b"))[0] == 0
    rc, err = check(repo, with_families(c1[:7], "a,nosuch"))                    # a typo cannot make a block current
    assert rc == 1 and "names the family nosuch" in err, err
    assert check(repo, with_families(c1[:7], ""))[0] == 2                        # families="" names none: broken marker

    # a generated table: its caption names the runs' families ("all": every family)
    table = "<!-- table: run=x dataset=/tables/t -->\n*… commit {c}, AVX2; do not edit. Fingerprint families: {f}.*\n<!-- /table -->\n"
    assert check(repo, table.format(c=c1[:12], f="a"))[0] == 0
    rc, err = check(repo, table.format(c=c1[:12], f="a, b"))
    assert rc == 1 and "table block: the bits moved" in err and "families a, b" in err, err
    assert check(repo, table.format(c=c1[:12], f="all"))[0] == 1

    # the page: each row of its record table (the runs of one commit) judged by its own families
    assert check_file(repo, "docs/reproduction.md", page(c2[:7], [(c1[:12], "a", 3), (c2[:12], "a, b", 2)]))[0] == 0
    rc, err = check_file(repo, "docs/reproduction.md", page(c2[:7], [(c1[:12], "a", 3), (c1[:12], "b", 2)]))
    assert rc == 1 and f"page block: the bits moved since commit {c1[:12]} (2 runs on docs/reproduction.md) (families b)" in err, err
    rc, err = check_file(repo, "docs/reproduction.md", page(c2[:7], [(c2[:12] + " (dirty)", "a", 1)]))
    assert rc == 1 and "made on a dirty tree" in err, err
    rc, err = check_file(repo, "docs/reproduction.md", page(c2[:7], [("zz", "a", 1)]))
    assert rc == 2 and "record row" in err, err
    # a page without a record table: its title's commit, every family (the old rule)
    old_page = f"# iclab reproduction: profile quick, commit {c1[:7]}\n\nGenerated.\n"
    assert check_file(repo, "docs/reproduction.md", old_page)[0] == 1

    # claims:quick blocks age with the page they are copied from (its record), and must be of the page's commit
    claims = "<!-- claims:quick -->\nGenerated … \"iclab reproduction: profile quick, commit {c}\"; do not edit.\n<!-- /claims:quick -->\n"
    check_file(repo, "docs/reproduction.md", page(c2[:7], [(c1[:12], "a", 3)]))
    assert check(repo, claims.format(c=c2[:7]))[0] == 0
    rc, err = check(repo, claims.format(c=c1[:7]))
    assert rc == 1 and "copied from the report of commit" in err, err
    check_file(repo, "docs/reproduction.md", page(c2[:7], [(c1[:12], "a", 3), (c1[:12], "b", 1)]))
    rc, err = check(repo, claims.format(c=c2[:7]))
    assert rc == 1 and "claims:quick block: the bits moved since commit " + c1[:12] in err and "families b" in err, err
    check_file(repo, "docs/reproduction.md", old_page)                            # no record: the block's own commit
    assert check(repo, claims.format(c=c2[:7]))[0] == 0 and check(repo, claims.format(c=c1[:7]))[0] == 1

print("measured_blocks rules: ok")

"""ctest report_unfinished: the partial page's list of unfinished jobs is parsed from `iclab sweep --dry-run` listings
(job lines only, every state), the nominal time left adds the pending jobs' estimates, and a finished profile lists none."""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from unfinished import estimate_minutes, parse_listing, read_parts, unfinished_html, unfinished_md  # noqa: E402

listing = """iclab: sweep /x/results/sweeps/reproduce_paper: 2 of 3 jobs to run, estimated about 1 GiB
finished    paper_lsa_gd  (about 0.0973 GiB, 1.3e+12 FLOP (about 25 s at 50 GFLOP/s))
running     paper_iclaa_seed-1  (about 2.45 GiB, 3.2e+14 FLOP (about 108 min at 50 GFLOP/s))
pending     paper_bias_training  (about 0.345 GiB, 3.4e+14 FLOP (about 2 h at 50 GFLOP/s))
/x/results/sweeps/reproduce_paper
"""
jobs = parse_listing(listing)
assert [(s, j) for s, j, _ in jobs] == [("finished", "paper_lsa_gd"), ("running", "paper_iclaa_seed-1"),
                                        ("pending", "paper_bias_training")], jobs
assert abs(estimate_minutes(jobs[0][2]) - 25 / 60) < 1e-12 and estimate_minutes(jobs[1][2]) == 108
assert estimate_minutes(jobs[2][2]) == 120 and estimate_minutes("no estimate") == 0
with tempfile.TemporaryDirectory() as tmp:
    with open(os.path.join(tmp, "1.listing"), "w") as f:
        f.write("configs/reproduce/paper.yaml\n" + listing)
    parts = read_parts(tmp)
    assert parts == [("configs/reproduce/paper.yaml", jobs)], parts
    md = "\n".join(unfinished_md(parts))
    assert "2 of 3 jobs" in md and "about 3.8 h" in md, md      # (108 + 120) min
    assert "| configs/reproduce/paper.yaml | paper_bias_training | pending |" in md and "paper_lsa_gd" not in md
    assert "| configs/reproduce/paper.yaml | 1 of 3 | 1 running, 1 pending | 3.8 h |" in md, md
    page = unfinished_html(parts)
    assert page.startswith("<h2 id='unfinished'>Not finished yet</h2>") and page.count("<table>") == 2, page
    assert "<td class='l'>paper_bias_training</td>" in page and "<details>" in page and "paper_lsa_gd" not in page
    done = [("configs/reproduce/paper.yaml", [("finished", "a", "")])]
    assert unfinished_md(done) == [] and unfinished_html(done) == "" and read_parts(os.path.join(tmp, "absent")) == []
print("report_unfinished: ok")

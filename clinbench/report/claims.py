"""The claim checker: every comparative sentence of the results prose against a test.

    python -m clinbench.report.claims                    # README's Results + docs/results.md
    python -m clinbench.report.claims docs/offline.md --report data/offline_study/trial_design

Prose drifts from its report: "memexrl scores above the heuristic" survives a re-run
whose Holm p is 1.0. This reads Markdown (README.md's ``## Results`` section, the whole
of docs/results.md by default), splits it into sentences (tables, code, images and
HTML comments aside) and finds the *comparative* ones: a sentence that names an agent
of the report and uses comparative wording (above, below, better, higher, level with,
reaches, not separated, a rank such as "fourth on", ...). Each must carry a claim tag,
an HTML comment in or right after the sentence (invisible when rendered), and each tag
must hold in the committed ``benchmark_report.json``::

    klong is significantly below the heuristic on recruitment.
    <!-- claim: heuristic > klong in recruitment -->

Tags (several in one comment, separated by ``;``; ``in SCOPE`` names a family of the
report: an environment family's confirmatory family, a task's exploratory family, or
``across families``):

- ``A > B[, C ...] in SCOPE``: significant after Holm, A ahead of each;
- ``A = B in SCOPE``: shown level by the equivalence test (TOST at the declared margin,
  Holm);
- ``A ~ B in SCOPE``: tested and not significant ("not separated");
- ``rank A = 2`` or ``rank A = 2-4 in SCOPE``: the rank range the confirmatory tests
  allow on SCOPE's aggregate, exactly;
- ``rate METRIC of A on TASK < X`` (or ``> X``): the exact binomial 95 % interval of an
  operating characteristic lies below (above) X, pooled and for each trained policy;
- ``value PATH = NUMBER``: a number of the JSON (dot path) rounds to NUMBER as printed.

A tag may end with ``from FOLDER`` (another results folder), and a comment
``<!-- claims-from: FOLDER -->`` sets the folder for the rest of its section.

A claim from an exploratory family (a task's, or a cross-family aggregate labelled
exploratory) needs the word "exploratory" in its sentence. The wording must match the
tags: superiority words need a ``>``, ``rank`` or ``rate`` tag; "level with", "reaches",
"matches" need ``=`` (or ``>`` when the sentence negates them: "no learner reaches
it"); "not separated" needs ``~``; every agent the sentence names must appear in one
of its tags. Causal wording ("because", "due to", "leads to", ...) about agents always
fails: no test in the report shows a cause. Exit code 1 lists every failing sentence.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: The canonical results the prose describes.
DEFAULT_REPORT = Path("data/sweep_results")
#: The prose checked by default: (file, the heading of the section checked, or None).
DEFAULT_DOCUMENTS = (("README.md", "Results"), ("docs/results.md", None))

#: How prose names agents besides their own names (matched case-sensitively).
ALIASES = {
    "MaskablePPO": "maskable_ppo",
    "maskable PPO": "maskable_ppo",
    "PPO": "ppo",
    "fixed design": "fixed_design",
    "reward-weighted BC": "rwbc",
    "BC": "bc",
    "IQL": "iql",
    "learned reward": "learned_reward",
}

SUPERIORITY = re.compile(
    r"\b(better|worse|above|below|higher|lower|outperform\w*|beats?|beaten|exceed\w*|"
    r"ahead of|behind|superior|inferior|surpass\w*|dominat\w*|best|worst|top|highest|"
    r"lowest|stronger|weaker|more than|less than|fewer than|wins?|loses?|lead(s|ing)?)\b",
    re.IGNORECASE,
)
EQUIVALENCE = re.compile(
    r"\b(level with|on par|as good as|reach(es|ed)?|match(es|ed)?|equivalent|"
    r"indistinguishable|the same as|comparable|close to|similar to|tie[sd]? with)\b",
    re.IGNORECASE,
)
NONDIFFERENCE = re.compile(
    r"\b(not separated|no significant|not significant\w*|not distinguishable|"
    r"no difference|not shown different)\b",
    re.IGNORECASE,
)
RANK = re.compile(
    r"\b(rank(s|ed)?|(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|last)"
    r"(?=\s*(on|in|among|of|place|overall)\b|\s*[,;:.)]))",
    re.IGNORECASE,
)
CAUSAL = re.compile(
    r"\b(because|due to|thanks to|owing to|caus(e|es|ed|ing)|leads? to|led to|"
    r"results? in|resulting in|explains?|which is why|that is why|so that|therefore|hence|"
    r"drives?|driven by)\b",
    re.IGNORECASE,
)
#: Words that stand for agents collectively ("no learner reaches it").
COLLECTIVE = re.compile(
    r"\b(agents?|learners?|designs?|polic(y|ies)|methods?|baselines?)\b", re.IGNORECASE
)
NEGATION = re.compile(r"\b(no|not|never|none|neither|nor|without)\b", re.IGNORECASE)
EXPLORATORY_WORD = re.compile(r"\bexploratory\b", re.IGNORECASE)

COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
TAG = re.compile(r"^\s*claims?\s*:(.*)$", re.DOTALL)
DIRECTIVE = re.compile(r"^\s*claims-from\s*:\s*(\S+)\s*$")
ABBREVIATIONS = ("e.g.", "i.e.", "vs.", "cf.", "et al.", "approx.", "Fig.")


class ClaimError(ValueError):
    """A claims file or report cannot be read at all (exit code 2)."""


@dataclass
class Sentence:
    """One sentence of prose, its claim tags and where it came from."""

    path: str
    line: int
    text: str
    tags: list[str] = field(default_factory=list)
    folder: Path | None = None


@dataclass
class Finding:
    sentence: Sentence
    problem: str

    def __str__(self) -> str:
        text = self.sentence.text if len(self.sentence.text) < 160 else self.sentence.text[:157]
        return f"{self.sentence.path}:{self.sentence.line}: {self.problem}\n    {text}"


# --------------------------------------------------------------------------- prose
def section(text: str, heading: str | None) -> tuple[str, int]:
    """The text under the heading titled ``heading`` up to the next heading of the same
    or a higher level (the whole text without one), and the line number it starts on."""
    if heading is None:
        return text, 1
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*?)\s*$", line)
        if m and m.group(2) == heading:
            level = len(m.group(1))
            end = next(
                (
                    j
                    for j in range(i + 1, len(lines))
                    if (h := re.match(r"^(#+)\s", lines[j])) and len(h.group(1)) <= level
                ),
                len(lines),
            )
            return "\n".join(lines[i + 1 : end]), i + 2
    raise ClaimError(f"no section {heading!r}")


def paragraphs(text: str, first_line: int = 1) -> list[tuple[int, list[str]]]:
    """Prose paragraphs (first line number, their lines): tables, fenced code and images
    left out, each list item its own paragraph, HTML comments kept."""
    out: list[tuple[int, list[str]]] = []
    fenced = False
    current: tuple[int, list[str]] | None = None
    for i, raw in enumerate(text.splitlines(), start=first_line):
        line = raw.strip()
        if line.startswith("```"):
            fenced = not fenced
            current = None
            continue
        skip = fenced or not line or line.startswith(("|", "![", "#"))
        if skip:
            current = None
            if line.startswith("#") and not fenced:
                out.append((i, [line]))  # a heading is a paragraph of its own
            continue
        item = re.match(r"^([-*+]|\d+\.)\s+", line)
        if item or current is None:
            current = (i, [line[item.end() :] if item else line])
            out.append(current)
        else:
            current[1].append(line)
    return out


def line_of(sentence: str, first: int, lines: list[str]) -> int:
    """The line of a paragraph a sentence starts on (by its first words)."""
    words = re.findall(r"\w+", sentence)[:4]
    for k, line in enumerate(lines):
        found = re.findall(r"\w+", plain(COMMENT.sub(" ", line)))
        if words and any(found[j : j + len(words)] == words for j in range(len(found))):
            return first + k
    return first


def plain(text: str) -> str:
    """Markdown bold, italics (``*``), code marks and links reduced to their text
    (underscores stay: they belong to agent and task names)."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"\*{1,2}|`", "", text).strip()


def sentences(paragraph: str) -> list[tuple[str, list[str]]]:
    """Sentences of a paragraph with the HTML comments that belong to each: a comment
    inside a sentence, or right after it (before the next sentence starts)."""
    comments: list[str] = []

    def hold(m: re.Match) -> str:
        comments.append(m.group(1))
        return f" \x00{len(comments) - 1}\x00 "

    text = COMMENT.sub(hold, paragraph)
    # a comment right after a sentence's full stop belongs to that sentence
    text = re.sub(r"([.!?])((?:\s*\x00\d+\x00)+)", r"\2\1", text)
    for k, abbr in enumerate(ABBREVIATIONS):
        text = text.replace(abbr, f"\x01{k}\x01")
    parts = re.split(r"(?<=[.!?])\s+(?=\S)", text)
    out: list[tuple[str, list[str]]] = []
    for part in parts:
        ids = [int(i) for i in re.findall(r"\x00(\d+)\x00", part)]
        body = re.sub(r"\s*\x00\d+\x00\s*([.!?]?)", r"\1 ", part).strip()
        body = re.sub(r"\s+", " ", body)
        for k, abbr in enumerate(ABBREVIATIONS):
            body = body.replace(f"\x01{k}\x01", abbr)
        tags = [comments[i] for i in ids]
        if not body and out:  # comments between sentences belong to the one before
            out[-1][1].extend(tags)
        elif body or tags:
            out.append((body, tags))
    return out


def read_prose(path: Path, heading: str | None, folder: Path) -> list[Sentence]:
    """Every sentence of ``path`` (its ``heading`` section) with its tags and folder."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClaimError(f"cannot read {path}: {exc}") from None
    body, first = section(text, heading)
    out = []
    current = folder
    for line, lines in paragraphs(body, first):
        para = " ".join(lines)
        if para.startswith("#"):
            current = folder  # a directive holds until the next heading
            continue
        for text_, comments in sentences(para):
            tags = []
            for c in comments:
                if m := DIRECTIVE.match(c):
                    current = Path(m.group(1))
                elif m := TAG.match(c):
                    tags += [t.strip() for t in m.group(1).split(";") if t.strip()]
            if text_:
                text_ = plain(text_)
                out.append(Sentence(str(path), line_of(text_, line, lines), text_, tags, current))
    return out


# --------------------------------------------------------------------------- tags
@dataclass
class Claim:
    kind: str  # ">", "=", "~", "rank", "rate", "value"
    agents: list[str]
    scope: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    folder: Path | None = None


PAIR_TAG = re.compile(r"^(?P<a>\S+)\s*(?P<op>>|=|~)\s*(?P<bs>.+?)\s+in\s+(?P<scope>.+)$")
RANK_TAG = re.compile(
    r"^rank\s+(?P<a>\S+)\s*=\s*(?P<lo>\d+)(?:\s*-\s*(?P<hi>\d+))?\s+in\s+(?P<scope>.+)$"
)
RATE_TAG = re.compile(
    r"^rate\s+(?P<metric>\S+)\s+of\s+(?P<a>\S+)\s+on\s+(?P<task>\S+)\s*(?P<op><|>)\s*(?P<x>[-+0-9.eE]+)$"
)
VALUE_TAG = re.compile(r"^value\s+(?P<path>\S+)\s*=\s*(?P<x>[-+0-9.eE]+)$")
FROM = re.compile(r"\s+from\s+(\S+)\s*$")


def parse_tag(tag: str, folder: Path | None) -> Claim:
    """One tag of a claim comment (see the module docstring)."""
    if m := FROM.search(tag):
        folder, tag = Path(m.group(1)), tag[: m.start()]
    tag = " ".join(tag.split())
    if m := RANK_TAG.match(tag):
        lo = int(m["lo"])
        hi = int(m["hi"]) if m["hi"] else lo
        return Claim("rank", [m["a"]], m["scope"].strip(), {"span": [lo, hi]}, folder)
    if m := RATE_TAG.match(tag):
        args = {"metric": m["metric"], "task": m["task"], "op": m["op"], "x": float(m["x"])}
        return Claim("rate", [m["a"]], m["task"], args, folder)
    if m := VALUE_TAG.match(tag):
        return Claim("value", [], None, {"path": m["path"], "x": m["x"]}, folder)
    if m := PAIR_TAG.match(tag):
        others = [b.strip() for b in m["bs"].split(",") if b.strip()]
        return Claim(m["op"], [m["a"], *others], m["scope"].strip(), {}, folder)
    raise ValueError(f"unreadable claim tag {tag!r}")


# --------------------------------------------------------------------------- reports
class Reports:
    """The committed report JSON of each results folder, read once."""

    def __init__(self, root: Path):
        self.root, self.cache = root, {}

    def get(self, folder: Path) -> dict[str, Any]:
        if folder not in self.cache:
            path = (self.root / folder / "benchmark_report.json").resolve()
            try:
                self.cache[folder] = json.loads(path.read_text())
            except (OSError, json.JSONDecodeError) as exc:
                raise ClaimError(f"cannot read the report {path}: {exc}") from None
        return self.cache[folder]


def _family(report: dict[str, Any], scope: str) -> dict[str, Any] | None:
    return next((f for f in report["families"] if f["name"] == scope), None)


def _pair(fam: dict[str, Any], a: str, b: str) -> dict[str, Any] | None:
    return next((p for p in fam["pairs"] if {p["a"], p["b"]} == {a, b}), None)


def _p(value: Any) -> str:
    return "-" if value is None else f"{value:.4g}"


def _leader(p: dict[str, Any]) -> str:
    return p["a"] if p["mean_diff"] > 0 else p["b"]


def check_pairs(claim: Claim, report: dict[str, Any], exploratory_ok: bool) -> list[str]:
    """Why a ``>``, ``=`` or ``~`` claim does not hold (empty: it holds)."""
    fam = _family(report, claim.scope)
    if fam is None:
        names = ", ".join(f["name"] for f in report["families"])
        return [f"no family {claim.scope!r} in the report (families: {names})"]
    if fam["role"] != "confirmatory" and claim.kind != "~" and not exploratory_ok:
        return [
            f"{claim.scope} is an exploratory family: say 'exploratory' in the sentence, or "
            + "cite a confirmatory family"
        ]
    a, *others = claim.agents
    problems = []
    for b in others:
        p = _pair(fam, a, b)
        if p is None:
            problems.append(f"{claim.scope} has no pair {a} vs {b}")
        elif claim.kind == ">" and not (p["significant"] and _leader(p) == a):
            problems.append(
                f"{a} > {b} is not significant in {claim.scope} (Holm p = {_p(p.get('p_holm'))}, "
                f"difference {p['mean_diff']:+.3f})"
                if not p["significant"]
                else f"{claim.scope} finds {b} > {a}, not {a} > {b}"
            )
        elif claim.kind == "=" and not p.get("equivalent"):
            e = p.get("equivalence") or {}
            problems.append(
                f"{a} and {b} are not shown level in {claim.scope} (TOST Holm p = "
                f"{_p(e.get('p_holm'))}, margin {e.get('margin')})"
            )
        elif claim.kind == "~" and (p["significant"] or p["status"] != "tested"):
            problems.append(
                f"{a} vs {b} in {claim.scope} is "
                + ("significant" if p["significant"] else f"not tested ({p.get('note')})")
            )
    return problems


def check_rank(claim: Claim, report: dict[str, Any]) -> list[str]:
    agg = (report.get("aggregates") or {}).get(claim.scope)
    if not agg or not agg.get("ranks"):
        return [f"no ranks for {claim.scope!r} in the report"]
    a = claim.agents[0]
    span = agg["ranks"].get(a)
    if span is None:
        return [f"{a} has no rank on {claim.scope}"]
    if list(span) != claim.args["span"]:
        want = "-".join(map(str, sorted(set(claim.args["span"]))))
        have = "-".join(map(str, sorted(set(span))))
        return [f"the tests allow {a} rank {have} on {claim.scope}, not {want}"]
    return []


def check_rate(claim: Claim, report: dict[str, Any]) -> list[str]:
    task, metric, op, x = (claim.args[k] for k in ("task", "metric", "op", "x"))
    oc = (report.get("operating_characteristics") or {}).get(task)
    a = claim.agents[0]
    if not oc or a not in oc["agents"] or metric not in oc["agents"][a]:
        return [f"no operating characteristic {metric} of {a} on {task}"]
    rows = [("pooled", oc["agents"][a][metric])]
    rows += [
        (f"seed {s}", r[metric])
        for s, r in (oc.get("policies") or {}).get(a, {}).items()
        if metric in r
    ]
    problems = []
    for where, c in rows:
        bound = c.get("hi") if op == "<" else c.get("lo")
        if bound is None or not (bound < x if op == "<" else bound > x):
            problems.append(
                f"{metric} of {a} on {task} ({where}): its 95 % interval "
                f"[{c.get('lo')}, {c.get('hi')}] is not {'below' if op == '<' else 'above'} {x}"
            )
    return problems


def check_value(claim: Claim, report: dict[str, Any]) -> list[str]:
    node: Any = report
    for key in claim.args["path"].split("."):
        if isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict) and key in node:
            node = node[key]
        else:
            return [f"no {claim.args['path']} in the report"]
    printed = claim.args["x"]
    digits = len(printed.split(".")[1]) if "." in printed else 0
    if not isinstance(node, (int, float)) or f"{node:.{digits}f}" != f"{float(printed):.{digits}f}":
        return [f"{claim.args['path']} is {node}, not {printed}"]
    return []


# --------------------------------------------------------------------------- sentences
def named_agents(text: str, agents: list[str]) -> set[str]:
    """The report's agents a sentence names (own names or ``ALIASES``)."""
    found = set()
    masked = text
    for alias, agent in sorted(ALIASES.items(), key=lambda kv: -len(kv[0])):
        if agent in agents and re.search(rf"(?<![\w@-]){re.escape(alias)}(?![\w@-])", masked):
            found.add(agent)
            masked = re.sub(rf"(?<![\w@-]){re.escape(alias)}(?![\w@-])", " ", masked)
    for agent in sorted(agents, key=len, reverse=True):
        if re.search(rf"(?<![\w@-]){re.escape(agent)}(?![\w@=+-])", masked):
            found.add(agent)
            masked = re.sub(rf"(?<![\w@-]){re.escape(agent)}(?![\w@=+-])", " ", masked)
    return found


def check_sentence(s: Sentence, reports: Reports, default: Path) -> list[str]:
    """Why a sentence is not supported (empty: it is, or it compares nothing)."""
    report = reports.get(s.folder or default)
    agents = list(report["protocol"]["agents"])
    named = named_agents(s.text, agents)
    problems = []
    claims = []
    for tag in s.tags:
        try:
            claims.append(parse_tag(tag, s.folder))
        except ValueError as exc:
            problems.append(str(exc))
    kinds = {c.kind for c in claims}
    words = {
        "superiority": SUPERIORITY.search(s.text),
        "equivalence": EQUIVALENCE.search(s.text),
        "non-difference": NONDIFFERENCE.search(s.text),
        "rank": RANK.search(s.text),
    }
    about_agents = bool(named) or bool(COLLECTIVE.search(s.text))
    comparative = about_agents and any(words.values())
    if about_agents and (m := CAUSAL.search(s.text)):
        problems.append(
            f"causal wording ({m.group(0)!r}) about agents: no test in the report shows a "
            "cause; state what was measured"
        )
    if comparative and not claims:
        found = next(m.group(0) for m in words.values() if m)
        who = ", ".join(sorted(named)) or "agents"
        problems.append(
            f"comparative wording ({found!r}) about {who} without a claim tag: add "
            "<!-- claim: ... --> naming the test, or rephrase"
        )
    elif comparative:
        negated = bool(NEGATION.search(s.text))
        need = {
            "superiority": {">", "rank", "rate", "value"},
            "equivalence": {"="} | ({">"} if negated else set()),
            "non-difference": {"~", "="},
            "rank": {"rank", ">"},
        }
        for word, m in words.items():
            if m and not kinds & need[word]:
                problems.append(
                    f"{word} wording ({m.group(0)!r}) needs a "
                    + " or ".join(sorted(need[word]))
                    + " claim"
                )
        tagged = {a for c in claims for a in c.agents}
        if kinds & {">", "=", "~", "rank", "rate"} and (missing := named - tagged):
            problems.append(
                f"the sentence names {', '.join(sorted(missing))} but no claim tag does"
            )
    exploratory_ok = bool(EXPLORATORY_WORD.search(s.text))
    for c in claims:
        rep = reports.get(c.folder or s.folder or default)
        if c.kind in (">", "=", "~"):
            problems += check_pairs(c, rep, exploratory_ok)
        elif c.kind == "rank":
            problems += check_rank(c, rep)
        elif c.kind == "rate":
            problems += check_rate(c, rep)
        else:
            problems += check_value(c, rep)
    return problems


def check(
    documents: list[tuple[Path, str | None]], report: Path = DEFAULT_REPORT, root: Path = ROOT
) -> tuple[list[Finding], int]:
    """Every unsupported sentence of ``documents`` and how many sentences were read."""
    reports = Reports(root)
    findings, count = [], 0
    for path, heading in documents:
        for s in read_prose(root / path if not path.is_absolute() else path, heading, report):
            count += 1
            findings += [Finding(s, p) for p in check_sentence(s, reports, report)]
    return findings, count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m clinbench.report.claims",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "documents",
        nargs="*",
        help="Markdown files (FILE, or FILE#Heading for one section); default: "
        "README.md#Results and docs/results.md",
    )
    parser.add_argument(
        "--report", type=Path, default=DEFAULT_REPORT, help="results folder the prose describes"
    )
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    docs = (
        [
            (Path(d.split("#", 1)[0]), d.split("#", 1)[1] if "#" in d else None)
            for d in args.documents
        ]
        if args.documents
        else [(Path(p), h) for p, h in DEFAULT_DOCUMENTS]
    )
    try:
        findings, count = check(docs, args.report, args.root)
    except ClaimError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for f in findings:
        print(f, file=sys.stderr)
    where = ", ".join(str(p) for p, _ in docs)
    if findings:
        print(
            f"{len(findings)} unsupported claim(s) in {where} ({count} sentences checked "
            f"against {args.report}/benchmark_report.json)",
            file=sys.stderr,
        )
        return 1
    print(f"every comparative sentence of {where} is supported ({count} sentences checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

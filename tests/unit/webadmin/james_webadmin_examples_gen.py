"""Writes ``james_webadmin_examples.json`` from James's WebAdmin documentation, once, by hand:

    python -m tests.unit.webadmin.james_webadmin_examples_gen <james-checkout> [<commit>]

(``<james-checkout>``: a git directory of apache/james-project; the files are read at ``<commit>``,
HEAD by default). The table keeps, for each ``curl`` example of the distributed server's page (the
shared partial with its distributed includes inlined): its section, method, target, request body,
the response codes its section lists, the shape of the response the doc shows after it (keys and
kinds, never values) and the task type it documents. No prose is kept; the test never reads the doc.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

PARTIAL = "docs/modules/servers/partials/operate/webadmin.adoc"
PAGE = "docs/modules/servers/pages/distributed/operate/webadmin.adoc"
INCLUDES = {f"admin-{name}-extend": f"docs/modules/servers/pages/distributed/operate/webadmin/admin-{name}-extend.adoc"
            for name in ("mail-queues", "mailboxes", "messages")}
OUT = Path(__file__).with_name("james_webadmin_examples.json")

CURL = re.compile(r"curl\s+(?:-X\s*)?(?P<method>GET|PUT|POST|DELETE|PATCH|HEAD)\b\s+[\"']?(?P<url>[^\s'\"]+)")
HEADER = re.compile(r"\s-H\s+[\"']?Content-Type: application/json[\"']?")   # once without its closing quote
BODY = re.compile(r"(?:-d|--data(?:-raw)?)\s+'(?P<body>[^']*)'", re.DOTALL)
CODE = re.compile(r"^\s*[*-]\s+(?P<code>[1-5]\d\d)\b")
HEADING = re.compile(r"^(?P<level>={2,5})\s+(?P<title>.+)$")
ANSWER = re.compile(r"return|respon|answer|looks? like|output|result", re.IGNORECASE)
TASK_TYPE = re.compile(r"following type `(?P<type>[^`]+)`")


def read(repo: str, commit: str, path: str) -> str:
    return subprocess.run(["git", "--git-dir", repo, "show", f"{commit}:{path}"], check=True,
                          capture_output=True, text=True).stdout


def inlined(repo: str, commit: str) -> list[str]:
    lines: list[str] = []
    for line in read(repo, commit, PARTIAL).splitlines():
        include = re.match(r"include::\{(?P<name>[^}]+)\}\[\]", line)
        if include and include["name"] in INCLUDES:
            lines += read(repo, commit, INCLUDES[include["name"]]).splitlines()
        else:
            lines.append(line)
    return lines + read(repo, commit, PAGE).splitlines()


def blocks(lines: list[str]) -> list[tuple[str, Any]]:
    """("heading", title) | ("block", text) | ("code", int) | ("task", type) | ("prose", line), in reading order."""
    items: list[tuple[str, Any]] = []
    inside: list[str] | None = None
    for line in lines:
        if line.strip() in ("....", "----"):
            if inside is None:
                inside = []
            else:
                items.append(("block", "\n".join(inside)))
                inside = None
            continue
        if inside is not None:
            inside.append(line)
        elif heading := HEADING.match(line):
            items.append(("heading", heading["title"].strip()))
        elif code := CODE.match(line):
            items.append(("code", int(code["code"])))
        elif task := TASK_TYPE.search(line):
            items.append(("task", task["type"]))
        elif line.strip():
            items.append(("prose", line))
    return items


def lenient_json(text: str) -> Any:
    """The doc's JSON samples, with their ``...`` elisions, comments and trailing commas removed."""
    kept = [re.sub(r"\s//.*$", "", line) for line in text.splitlines() if line.strip() not in ("...", ",...", "…")]
    cleaned = re.sub(r",\s*([}\]])", r"\1", re.sub(r",\s*\.\.\.", "", "\n".join(kept)))
    for candidate in (cleaned, cleaned.strip().split("\n\n")[0]):   # several samples: the first
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def is_request(sample: Any) -> bool:
    """A body sample, not a task's additionalInformation (which has a ``type``)."""
    return sample is not None and not (isinstance(sample, dict) and ("type" in sample or "toVersion" in sample))


def shape(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "string"


def examples(lines: list[str]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    section, in_section = "", []   # the examples of the current section, waiting for its codes
    prose = ""   # what the doc says between an example and the next block
    for kind, value in blocks(lines):
        if kind == "heading":
            section, in_section = value, []
        elif kind == "prose":
            prose += " " + value
        elif kind == "block":
            text = " ".join(part.rstrip("\\").strip() for part in value.splitlines())
            if (curl := CURL.search(HEADER.sub("", text))) is not None:
                body = BODY.search(text)
                inline = value.split("\n", 1)[1] if "\n" in value else ""   # a body written under the command
                example = {"section": section, "method": curl["method"],
                           "target": re.sub(r"^https?://ip:port", "", curl["url"]),
                           "body": body["body"] if body else json.dumps(lenient_json(inline)) if inline.strip() and
                           lenient_json(inline) is not None else None, "codes": [], "response": None, "taskType": None}
                found.append(example)
                in_section.append(example)
            elif (in_section and in_section[-1]["body"] is None and in_section[-1]["method"] in ("PUT", "POST", "PATCH")
                  and re.search(r"\bbody\b", prose, re.IGNORECASE) and "additionalInformation" not in prose
                  and is_request(lenient_json(value))):
                in_section[-1]["body"] = json.dumps(lenient_json(value))   # "the body can contain: ..."
            elif (in_section and in_section[-1]["response"] is None and not in_section[-1]["taskType"]
                  and ANSWER.search(prose) and (sample := lenient_json(value)) is not None):
                # a task's JSON is its additionalInformation; an answer is introduced as one
                in_section[-1]["response"] = shape(sample)
            prose = ""
        elif kind == "code":
            for example in in_section:
                if value not in example["codes"]:
                    example["codes"].append(value)
        elif kind == "task":
            for example in in_section:
                example["taskType"] = example["taskType"] or value
    for example in found:   # a task's sample is its additionalInformation, not the answer (its id)
        if example["method"] != "GET" and isinstance(example["response"], dict) and "type" in example["response"]:
            example["response"] = None
    return found


def main(argv: list[str]) -> None:
    repo, commit = argv[0], argv[1] if len(argv) > 1 else "HEAD"
    revision = subprocess.run(["git", "--git-dir", repo, "rev-parse", commit], check=True, capture_output=True,
                              text=True).stdout.strip()
    table = {"source": {"repository": "apache/james-project", "commit": revision, "files": [PARTIAL, PAGE,
                                                                                          *INCLUDES.values()]},
             "generator": "tests/unit/webadmin/james_webadmin_examples_gen.py",
             "examples": examples(inlined(repo, revision))}
    OUT.write_text(json.dumps(table, indent=1) + "\n")
    print(f"{len(table['examples'])} examples written to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Read ``mailetcontainer.yaml`` into a checked specification, keeping file and line of everything.

Schema (James's ``mailetcontainer.xml`` in YAML)::

    context:
      postmaster: postmaster@example.com   # a bare local part gets ``defaultDomain``
      defaultDomain: example.com           # optional
    spooler:
      threads: 20
      errorRepository: cassandra://var/mail/error/
      maxRetries: 5                        # re-enqueues before the mail goes to ``error``
    matchers:                              # named composite matchers (Or / And / Not / Xor)
      relay-allowed:
        or: [SMTPAuthSuccessful, SMTPIsAuthNetwork, SentByMailet]
    processors:
      root:                                # processor name -> ordered matcher/mailet pairs
        - match: RelayLimit=30             # James syntax ``Name=condition``; absent = All
          mailet: ToRepository
          params: {repositoryPath: "cassandra://var/mail/relay-limit-exceeded/"}
          onMailetException: error         # error (default) | ignore | propagate | <processor>
          onMatchException: error          # error (default) | nomatch | matchall | propagate | <processor>
        - notmatch: SMTPAuthSuccessful     # inverted matcher

Every problem found (unknown key, matcher, mailet, processor; bad parameter) is reported as
``<file>:<line>: <what>``, with the line of the offending YAML node.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mailserver.mailets.api import ConfigError

PAIR_KEYS = frozenset({"match", "notmatch", "mailet", "params", "onMatchException", "onMailetException"})
TOP_KEYS = frozenset({"context", "spooler", "matchers", "processors"})
COMPOSITE_OPS = ("or", "and", "not", "xor")
DEFAULT_FILE = Path(__file__).resolve().parents[2] / "include" / "mailetcontainer.yaml"


@dataclass(frozen=True)
class Where:
    file: str
    line: int  # 1-based

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def error(self, message: str) -> ConfigError:
        return ConfigError(f"{self}: {message}")


@dataclass
class CompositeSpec:
    op: str                                  # or / and / not / xor
    children: list[str | CompositeSpec]      # ``Name=condition``, a composite name, or nested
    where: Where


@dataclass
class PairSpec:
    mailet: str
    where: Where
    match: str | CompositeSpec = "All"
    inverted: bool = False
    params: dict[str, Any] = field(default_factory=dict)
    on_match_exception: str = "error"
    on_mailet_exception: str = "error"
    match_where: Where | None = None
    mailet_where: Where | None = None


@dataclass
class ProcessorSpec:
    name: str
    pairs: list[PairSpec]
    where: Where


@dataclass
class SpoolerSpec:
    threads: int = 20
    error_repository: str = "cassandra://var/mail/error/"
    max_retries: int = 5


@dataclass
class ContainerSpec:
    source: str
    processors: dict[str, ProcessorSpec]
    matchers: dict[str, CompositeSpec]
    spooler: SpoolerSpec
    postmaster: str = "postmaster"
    default_domain: str | None = None


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def where(self, node: yaml.Node) -> Where:
        return Where(self.source, node.start_mark.line + 1)

    def value(self, node: yaml.Node) -> Any:
        return yaml.SafeLoader("").construct_document(node)

    def mapping(self, node: yaml.Node, what: str) -> list[tuple[yaml.ScalarNode, yaml.Node]]:
        if not isinstance(node, yaml.MappingNode):
            raise self.where(node).error(f"{what} must be a mapping")
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                raise self.where(key).error(f"{what}: keys must be plain names")
        return node.value

    def sequence(self, node: yaml.Node, what: str) -> list[yaml.Node]:
        if not isinstance(node, yaml.SequenceNode):
            raise self.where(node).error(f"{what} must be a list")
        return node.value

    def text(self, node: yaml.Node, what: str) -> str:
        if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
            raise self.where(node).error(f"{what} must be a non-empty text")
        return str(node.value).strip()

    # -- sections -------------------------------------------------------------------------------
    def document(self, root: yaml.Node | None) -> ContainerSpec:
        if root is None:
            raise ConfigError(f"{self.source}: empty mailet container configuration")
        sections: dict[str, yaml.Node] = {}
        for key, value in self.mapping(root, "the configuration"):
            if key.value not in TOP_KEYS:
                raise self.where(key).error(f"unknown section {key.value!r} (known: {', '.join(sorted(TOP_KEYS))})")
            sections[key.value] = value
        if "processors" not in sections:
            raise self.where(root).error("no 'processors' section")
        spec = ContainerSpec(self.source, {}, {}, SpoolerSpec())
        if "context" in sections:
            self.context(sections["context"], spec)
        if "spooler" in sections:
            spec.spooler = self.spooler(sections["spooler"])
        if "matchers" in sections:
            for key, value in self.mapping(sections["matchers"], "matchers"):
                spec.matchers[key.value] = self.composite(value, f"composite matcher {key.value!r}")
        for key, value in self.mapping(sections["processors"], "processors"):
            name = key.value
            if name in spec.processors:
                raise self.where(key).error(f"processor {name!r} defined twice")
            pairs = [self.pair(item, name) for item in self.sequence(value, f"processor {name!r}")]
            spec.processors[name] = ProcessorSpec(name, pairs, self.where(key))
        return spec

    def context(self, node: yaml.Node, spec: ContainerSpec) -> None:
        for key, value in self.mapping(node, "context"):
            if key.value == "postmaster":
                spec.postmaster = self.text(value, "postmaster")
            elif key.value == "defaultDomain":
                spec.default_domain = self.text(value, "defaultDomain")
            else:
                raise self.where(key).error(f"context: unknown key {key.value!r} (known: defaultDomain, postmaster)")

    def spooler(self, node: yaml.Node) -> SpoolerSpec:
        spooler = SpoolerSpec()
        for key, value in self.mapping(node, "spooler"):
            raw = self.value(value)
            if key.value in ("threads", "maxRetries"):
                if not isinstance(raw, int) or isinstance(raw, bool) or raw < 0:
                    raise self.where(value).error(f"spooler.{key.value} must be a non-negative integer")
                if key.value == "threads":
                    spooler.threads = raw
                else:
                    spooler.max_retries = raw
            elif key.value == "errorRepository":
                spooler.error_repository = self.text(value, "spooler.errorRepository")
            else:
                raise self.where(key).error(f"spooler: unknown key {key.value!r}")
        return spooler

    def composite(self, node: yaml.Node, what: str) -> CompositeSpec:
        entries = self.mapping(node, what)
        if len(entries) != 1 or entries[0][0].value.lower() not in COMPOSITE_OPS:
            raise self.where(node).error(f"{what} must have exactly one of the keys or, and, not, xor")
        op_key, children_node = entries[0]
        children_nodes = ([children_node] if isinstance(children_node, yaml.ScalarNode)
                          else self.sequence(children_node, what))
        children: list[str | CompositeSpec] = [
            self.text(c, what) if isinstance(c, yaml.ScalarNode) else self.composite(c, what) for c in children_nodes]
        if not children:
            raise self.where(children_node).error(f"{what} has no child matcher")
        return CompositeSpec(op_key.value.lower(), children, self.where(op_key))

    def pair(self, node: yaml.Node, processor: str) -> PairSpec:
        what = f"processor {processor!r}"
        entries = dict((k.value, (k, v)) for k, v in self.mapping(node, f"{what}: each entry"))
        for name, (key, _) in entries.items():
            if name not in PAIR_KEYS:
                raise self.where(key).error(f"{what}: unknown key {name!r} (known: {', '.join(sorted(PAIR_KEYS))})")
        if "mailet" not in entries:
            raise self.where(node).error(f"{what}: entry without 'mailet'")
        if "match" in entries and "notmatch" in entries:
            raise self.where(node).error(f"{what}: 'match' and 'notmatch' are exclusive")
        mailet_node = entries["mailet"][1]
        pair = PairSpec(mailet=self.text(mailet_node, "mailet"), where=self.where(node),
                        mailet_where=self.where(mailet_node), match_where=self.where(node))
        for match_key in ("match", "notmatch"):
            if match_key in entries:
                value = entries[match_key][1]
                pair.match = (self.composite(value, f"{what}: {match_key}") if isinstance(value, yaml.MappingNode)
                              else self.text(value, match_key))
                pair.inverted = match_key == "notmatch"
                pair.match_where = self.where(value)
        if "params" in entries:
            params_node = entries["params"][1]
            if isinstance(params_node, yaml.ScalarNode) and params_node.value in ("", "~", "null"):
                params: Any = {}
            else:
                self.mapping(params_node, f"{what}: params")
                params = self.value(params_node)
            pair.params = dict(params or {})
        for option, attr in (("onMatchException", "on_match_exception"), ("onMailetException", "on_mailet_exception")):
            if option in entries:
                setattr(pair, attr, self.text(entries[option][1], option))
        return pair


def parse(text: str, source: str = "<string>") -> ContainerSpec:
    """Parse (not build) a configuration; raises ConfigError with ``source:line``."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(filter(None, (getattr(exc, "context", None), getattr(exc, "problem", None)))) or exc
        raise ConfigError(f"{source}{line}: invalid YAML: {problem}") from None
    return _Reader(source).document(root)


def load(path: str | Path = DEFAULT_FILE) -> ContainerSpec:
    path = Path(path)
    return parse(path.read_text(encoding="utf-8"), str(path))

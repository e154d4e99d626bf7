"""``--workload`` and ``--ranges``: the workload a command releases, named in the command's words."""

from __future__ import annotations

from collections.abc import Mapping

from .. import workloads
from ..data import Domain
from ..workloads import RANGE_BLOCKS, Workload

__all__ = ["WORKLOAD_FORMS", "parse_workload", "parse_ranges"]

#: The forms ``--workload`` accepts.
WORKLOAD_FORMS = ("marginals:WAY, marginals:LOW-HIGH (every table of LOW to HIGH attributes), range-marginals:WAY "
                  "(with --ranges), identity, prefix:ATTR, all_range:ATTR")


def parse_workload(spec: str, domain: Domain, implicit: bool = False, *,
                   ranges: Mapping[str, str] | None = None) -> Workload:
    """The workload ``--workload`` names over ``domain``: ``marginals:WAY``, ``marginals:LOW-HIGH``,
    ``range-marginals:WAY`` (with ``ranges``, ``--ranges``' mapping of attribute to block),
    ``identity`` (every cell), ``prefix:ATTR`` or ``all_range:ATTR`` (on one attribute, the
    others summed out; ``ATTR`` may be left out over a single attribute). Labels name the
    attributes. ``implicit``: never build the explicit matrix."""
    name, _, argument = spec.partition(":")
    if ranges and name != "range-marginals":
        raise ValueError(f"--ranges: applies only to --workload range-marginals:WAY, not {spec!r}")
    structure = True if implicit else None
    attributes = len(domain)
    has = f"--domain has {'only ' if attributes > 1 else ''}{attributes} attribute{'s' if attributes > 1 else ''}"
    if name == "marginals":
        low, _, high = argument.partition("-")
        try:
            ways = tuple(range(int(low), int(high) + 1)) if high else (int(low),)
        except ValueError:
            raise ValueError(f"--workload: expected marginals:WAY or marginals:LOW-HIGH with integers, got {spec!r}") \
                from None
        if not ways:
            raise ValueError(f"--workload: marginals:LOW-HIGH needs LOW <= HIGH, got {spec!r}")
        if ways[-1] > attributes:
            raise ValueError(f"--workload: {spec!r} asks for {ways[-1]}-way tables, but {has}; use "
                             f"{'HIGH' if high else 'WAY'} <= {attributes}")
        if len(ways) == 1 and ways[0] >= 1:
            return workloads.marginals(domain, ways[0], implicit=implicit)
        return workloads.marginals(domain, ways=ways, implicit=implicit)
    if name == "range-marginals":
        try:
            way = int(argument)
        except ValueError:
            raise ValueError(f"--workload: expected range-marginals:WAY with an integer WAY, got {spec!r}") from None
        if not 1 <= way <= attributes:
            raise ValueError(f"--workload: {spec!r}: WAY must lie between 1 and the number of attributes ({has})")
        if not ranges:
            raise ValueError("--ranges: range-marginals:WAY needs --ranges ATTR=prefix|all_range[,...]")
        for attribute, block in ranges.items():
            if attribute not in domain:
                raise ValueError(f"--ranges: {attribute!r} names no attribute of the domain "
                                 f"({', '.join(domain.attributes)})")
            if block not in RANGE_BLOCKS:
                raise ValueError(f"--ranges: {attribute}={block}: expected one of {', '.join(sorted(RANGE_BLOCKS))} "
                                 "after the '='")
            check_ordered("--ranges", f"{attribute}={block}", attribute, domain)
        return workloads.range_marginals(domain, way, ranges, implicit=bool(implicit))
    if name in ("prefix", "all_range"):
        if not argument and len(domain) > 1:
            raise ValueError(f"--workload: {name} over {len(domain)} attributes needs one: {name}:ATTR, ATTR one of "
                             f"{', '.join(domain.attributes)}")
        attribute = argument or domain.attributes[0]
        if attribute not in domain:
            raise ValueError(f"--workload: {spec!r} names no attribute of the domain ({', '.join(domain.attributes)})")
        check_ordered("--workload", spec, attribute, domain)
        builder = workloads.prefix if name == "prefix" else workloads.all_range
        blocks = [builder(size) if attribute == other else workloads.total(size)
                  for other, size in zip(domain.attributes, domain.sizes)]
        return workloads.kron(blocks, domain=domain, name=f"{name}:{attribute}", implicit=structure)
    if name == "identity":
        if argument:
            raise ValueError(f"--workload: 'identity' takes no argument, got {spec!r}")
        return workloads.kron([workloads.identity(size) for size in domain.sizes], domain=domain, name="identity",
                              implicit=structure)
    raise ValueError(f"--workload: expected {WORKLOAD_FORMS}; got {spec!r}")


def parse_ranges(text: str | None) -> dict[str, str] | None:
    """``--ranges age=prefix,hours=all_range`` as a mapping of attribute to block name."""
    if text is None:
        return None
    ranges: dict[str, str] = {}
    for item in text.split(","):
        attribute, sign, block = (part.strip() for part in item.partition("="))
        if not sign or not attribute or not block:
            raise ValueError(f"--ranges: expected ATTR=BLOCK[,ATTR=BLOCK...], got {text!r}")
        if attribute in ranges:
            raise ValueError(f"--ranges: {attribute!r} is given twice")
        ranges[attribute] = block
    return ranges

def check_ordered(flag: str, spec: str, attribute: str, domain: Domain) -> None:
    """Ranges over ``attribute`` need its values in an order: bins, a size, or categories the
    domain file declares ordered (the library refuses the same, in its own words)."""
    if not domain.encoding(attribute).ordered:
        raise ValueError(f"{flag}: {spec!r} takes ranges of {attribute!r}, whose categories have no order; declare "
                         f"them ordered in the domain file ({{\"{attribute}\": {{\"categories\": [...], \"ordered\": "
                         f"true}}}}), or give {attribute!r} bins or a size")


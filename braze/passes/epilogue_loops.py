"""Loop kernels that join the epilogue of the product whose result they read.

Output fusion (``fuse.plan_fusion``) grows a contraction's epilogue as a chain: each op the
one reader of the last. A result read twice ends the chain, and the loop kernel that reads
it twice, or reads it beside other values (an optimizer's update of a parameter by its
gradient, LeNet's SGD step), reads it back from memory. Where the policy allows it
(``FusionPolicy.epilogue_takes_loops``), such a loop kernel joins the product's kernel: its
ops are computed as each element of the product is stored, and the product is written only
where another kernel reads it. Only cheap loops join (``FusionPolicy.cheap_in_epilogue``):
one of transcendentals is bound by its arithmetic, which is no cheaper in the epilogue.

A loop kernel may join when everything in it that depends on the product is elementwise at
the element being stored, of the product's shape (a store computes its epilogue at that
element only: a transpose of the product would need another element; so the loop, whose
results are of its root's shape, loops over the product's), and when it depends on the
product through no other kernel (that kernel would then read the merged one and be read by
it, a cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

from braze.ir.graph import Node
from braze.passes.fusion_policy import YES, Decision, FusionPolicy, no
from braze.passes.kernel_graph import Group, KernelGraph


@dataclass
class EpilogueContext:
    """What the merge asks of the graph: each node's topological position, and the nodes
    that each kernel reading them computes (``shared``: a free broadcast)."""

    position: dict[int, int]
    shared: dict[int, list[Group]]


def merge_epilogue_loops(
    groups: list[Group],
    owner: dict[int, Group],
    kernels: KernelGraph,
    policy: FusionPolicy,
    context: EpilogueContext,
) -> tuple[list[Group], list[str]]:
    """``groups`` with each loop kernel that may join a product's epilogue absorbed into
    it (``owner``, ``kernels`` and the context's ``shared`` kept up to date), and the refusals."""
    refusals: list[str] = []
    removed: set[int] = set()
    # Producers first: a loop reading the product and another loop that reads it (a GELU's
    # erf, then the activation) joins once the other has.
    for loop in sorted((g for g in groups if g.kind == "loop"), key=kernels.rank.__getitem__):
        for product in sorted(kernels.producers[loop], key=kernels.rank.__getitem__):
            if product.kind != "output" or not policy.epilogue_takes_loops(product.members[0]):
                continue
            decision = _may_join(loop, product, kernels, policy, context)
            if not decision.ok:
                refusals.append(decision.reason)
                continue
            product.absorb(loop)
            for member in loop.members:
                if owner.get(id(member)) is loop:
                    owner[id(member)] = product
            for readers in context.shared.values():
                if loop in readers:
                    readers.remove(loop)
                    if product not in readers:
                        readers.append(product)
            kernels.merge(product, loop)
            removed.add(id(loop))
            break
    return [g for g in groups if id(g) not in removed], refusals


def _may_join(
    loop: Group, product: Group, kernels: KernelGraph, policy: FusionPolicy, context: EpilogueContext
) -> Decision:
    root = product.members[0]
    name = f"loop kernel {loop.members[0].op} {loop.members[0].aval}"
    if len(product.members) + len(loop.members) > policy.max_fused_ops:
        return no(f"{name} and the epilogue of {root.op} {root.aval} would hold more than {policy.max_fused_ops} ops")
    costly = next((m for m in loop.members if not policy.cheap_in_epilogue(m)), None)
    if costly is not None:
        return no(f"{name} computes {costly.op} {costly.aval}: faster in a loop of its own than at each stored element")
    for other in kernels.producers[loop]:
        if other is not product and kernels.depends_on(other, product):
            return no(f"{name} reads {root.op} {root.aval} also through another kernel")
    offender = _not_at_element(loop, product, root, context.position)
    if offender is not None:
        return no(
            f"{name} stays out of the epilogue of {root.op} {root.aval}: its {offender.op} {offender.aval} reads "
            "the product at another element"
        )
    return YES


def _not_at_element(loop: Group, product: Group, root: Node, position: dict[int, int]) -> Node | None:
    """The first member of ``loop`` that reads a value computed from the product other than
    elementwise at the element being stored, if any."""
    from_product = {id(m) for m in product.members}
    for member in sorted(loop.members, key=lambda m: position[id(m)]):
        if not any(id(i) in from_product for i in member.inputs):
            continue
        if not member.op.elementwise or member.shape != root.shape:
            return member
        from_product.add(id(member))
    return None

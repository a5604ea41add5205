from uuid import uuid4

from lakeledger.domain import deletion
from lakeledger.domain.errors import AlreadyExists
from lakeledger.domain.name_claim import NAMESPACE, TABULAR
from lakeledger.domain.names import DEFAULT_NAMESPACE_DEPTH, check_namespace, check_new_namespace_depth, dotted
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import Tabular
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.services import placement, resolve
from lakeledger.services.approval import DROP, ProposedChange
from lakeledger.services.conditions import namespace_exists, namespace_is_empty, tree_unchanged, warehouse_is_active
from lakeledger.services.unit_of_work import Ledger, all_found


class NamespaceService:
    def __init__(self, ledger: Ledger, max_depth: int = DEFAULT_NAMESPACE_DEPTH):
        self.ledger = ledger
        self.max_depth = max_depth  # of new namespaces: those made under a higher limit stay reachable

    def create(self, warehouse_id: str, path: list[str], properties: dict[str, str], by: Provenance) -> Namespace:
        levels = check_namespace(path)
        check_new_namespace_depth(levels, self.max_depth)

        def command() -> Namespace:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            placement.check_namespace_location(wh, properties)
            parent = resolve.namespace(self.ledger, wh, levels[:-1]) if len(levels) > 1 else None
            # below its parent as the parent is spelt (a case-insensitive warehouse finds it in any case)
            path = (*parent.path, levels[-1]) if parent else levels
            ns_id = uuid4()
            claim = self.ledger.claim(NAMESPACE, parent.id if parent else wh.id, levels[-1], ns_id,
                                      "Namespace", by, dotted(path), wh.name_matching)
            ns = Namespace.create(ns_id, wh.id, parent.id if parent else None, path, properties, by)
            self.ledger.append(claim, ns, conditions=[namespace_exists(parent.id, path[:-1]) if parent
                                                      else warehouse_is_active(wh.id, wh.name)])
            return ns

        return self.ledger.retrying(command, AlreadyExists, f"Namespace already exists: {dotted(levels)}")

    def update_properties(self, warehouse_id: str, path: list[str], updates: dict[str, str], removals: list[str],
                          by: Provenance) -> tuple[list[str], list[str], list[str]]:
        levels = check_namespace(path)

        def command() -> tuple[list[str], list[str], list[str]]:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            placement.check_namespace_location(wh, updates)
            result = ns.update_properties(updates, removals, by)
            self.ledger.append(ns)
            return result

        return self.ledger.retrying(command)

    def drop(self, warehouse_id: str, path: list[str], by: Provenance, recursive: bool = False, force: bool = False,
             purge: bool = True) -> None:
        """Without ``recursive`` the namespace must be empty. With it, everything below goes in one atomic
        append: soft in a soft warehouse (an undrop of this namespace brings all of it back), final in a hard
        one or with ``force``. ``force`` overrides protection; ``purge`` asks for the tables' files to be deleted
        when their deletion becomes final."""
        levels = check_namespace(path)

        def command() -> None:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = resolve.namespace(self.ledger, wh, levels)
            # as in Lakekeeper, force skips soft deletion only for a recursive drop; alone it overrides protection
            expires_at = deletion.expiry(wh.delete_profile, self.ledger.now(), immediately=force and recursive)
            if not recursive:
                ns.drop(expires_at, force, by)  # refuses a protected namespace first
                self.ledger.approval.review(_proposed(ns, by, recursive=False))
                claim = self.ledger.release(NAMESPACE, ns.parent_id or wh.id, ns.name, ns.id, by, wh.name_matching)
                self.ledger.append(claim, ns, conditions=[namespace_is_empty(ns.id, dotted(levels))])
                return
            tree = self.ledger.queries.namespace_tree(ns.id)
            namespaces = [
                self.ledger.log.get(Namespace, i) for kind, i, _ in tree if kind == "namespace" and i != ns.id
            ]
            tabulars = [self.ledger.log.get(Tabular, i) for kind, i, _ in tree if kind != "namespace"]
            if not (all_found(namespaces) and all_found(tabulars)):  # the read model moved on since the tree was read
                raise ConcurrentChange("The namespace tree changed while it was being dropped")
            # Each drop refuses a protected object; the namespace asked for is checked first, so that when it is
            # protected its refusal is the one reported.
            ns.deletion.check_droppable("namespace", dotted(levels), force)
            for t in tabulars:
                t.drop(purge and t.kind != "view", expires_at, force, by, with_namespace=ns.id)  # a view has no files
            for child in namespaces:
                child.drop(expires_at, force, by, with_namespace=ns.id)
            ns.drop(expires_at, force, by, contents={"namespaces": [n.id for n in namespaces],
                                                     "tabulars": [t.id for t in tabulars]})
            self.ledger.approval.review(_proposed(ns, by, recursive=True, purge=purge,
                                                  namespaces=len(namespaces), tabulars=len(tabulars)))
            matching = wh.name_matching
            released = [self.ledger.release(TABULAR, t.namespace_id, t.name, t.id, by, matching) for t in tabulars]
            for child in namespaces:
                assert child.parent_id is not None  # below the dropped namespace: it has a parent
                released.append(self.ledger.release(NAMESPACE, child.parent_id, child.name, child.id, by, matching))
            released.append(self.ledger.release(NAMESPACE, ns.parent_id or wh.id, ns.name, ns.id, by, matching))
            self.ledger.append(*released, *namespaces, *tabulars, ns,
                               conditions=[tree_unchanged([ns.id, *(n.id for n in namespaces)],
                                                          [t.id for t in tabulars])])

        self.ledger.retrying(command)


def _proposed(ns: Namespace, by: Provenance, **options: object) -> ProposedChange:
    return ProposedChange(DROP, "namespace", ns.id, ns.warehouse_id, list(ns.path), by, dict(options))

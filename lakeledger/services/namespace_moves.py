"""Moving a namespace to another place in its warehouse's tree: under another parent, under another name, or both
(Lakekeeper 0.14's move endpoint). A rename is a move that keeps the parent.

A move is one append: the namespace's name claim released under its old parent and taken under the new one, a
``Namespace.Moved`` on the namespace and on every namespace below it, and a ``Tabular.Moved`` on every table and view in
them, live or soft-dropped (an undrop brings those back under the new path). Every aggregate goes in at the version
the command read, so a concurrent drop, rename, commit or undrop of any of them, or a create that takes the
destination name, makes one of the two lose its race; a create inside the tree is caught by the append condition
``moved_tree_unchanged``, and one that lands after the move by its own condition (``namespace_exists`` checks the path
it records). Nothing else changes: ids, properties, protection, locations, grants (the tree keeps its own; it inherits
from its new parent instead of its old one)."""

from dataclasses import dataclass
from uuid import UUID

from lakeledger.domain.errors import BadRequest, NamespaceDepthExceeded, NoSuchNamespace
from lakeledger.domain.name_claim import NAMESPACE
from lakeledger.domain.names import DEFAULT_NAMESPACE_DEPTH, check_namespace, check_new_name, dotted, name_key, path_key
from lakeledger.domain.namespace import Namespace
from lakeledger.domain.provenance import Provenance
from lakeledger.domain.tabular import Tabular
from lakeledger.eventstore.log import ConcurrentChange
from lakeledger.services import resolve
from lakeledger.services.conditions import moved_tree_unchanged, namespace_exists, warehouse_is_active
from lakeledger.services.unit_of_work import Ledger, all_found


@dataclass(frozen=True)
class MovedNamespace:
    """Where the namespace is after the move: its id, its path and its parent (None: at the warehouse's root)."""

    id: UUID
    path: tuple[str, ...]
    parent_id: UUID | None


class NamespaceMoves:
    def __init__(self, ledger: Ledger, max_depth: int = DEFAULT_NAMESPACE_DEPTH):
        self.ledger = ledger
        self.max_depth = max_depth  # a move makes namespaces at new depths: the limit of new namespaces applies

    def move(self, warehouse_id: str, namespace_id: UUID, destination: list[str], force: bool,
             by: Provenance) -> MovedNamespace:
        """Moves the live namespace ``namespace_id`` to the full path ``destination`` (its new parent's path and its
        new name). The same path again changes nothing. ``force`` moves a protected namespace."""
        asked = check_namespace(destination)
        check_new_name(asked[-1], "Namespace")

        def command() -> MovedNamespace:
            wh = resolve.warehouse(self.ledger, warehouse_id)
            ns = self.ledger.log.get(Namespace, namespace_id)
            if ns is None or ns.dropped or ns.warehouse_id != wh.id:
                raise NoSuchNamespace(f"Namespace does not exist: {namespace_id}")
            source = tuple(ns.path)
            matching, to = wh.name_matching, asked
            if to == source:
                return MovedNamespace(ns.id, source, ns.parent_id)
            if len(to) > len(source) and path_key(to[:len(source)], matching) == path_key(source, matching):
                raise BadRequest(f"Cannot move namespace {dotted(source)} to {dotted(to)}: that is inside it")
            parent = resolve.namespace(self.ledger, wh, to[:-1]) if len(to) > 1 else None
            to = (*parent.path, to[-1]) if parent is not None else to  # the new parent as it is spelt
            if to == source:
                return MovedNamespace(ns.id, source, ns.parent_id)
            tree = self.ledger.queries.moved_tree(wh.id, ns.id)
            below = [self.ledger.log.get(Namespace, i) for kind, i in tree if kind == "namespace" and i != ns.id]
            tabulars = [self.ledger.log.get(Tabular, i) for kind, i in tree if kind != "namespace"]
            if not (all_found(below) and all_found(tabulars)):
                raise ConcurrentChange("The namespace tree changed while it was being moved")
            if any(tuple(n.path[:len(source)]) != source for n in below):  # read while another move went in
                raise ConcurrentChange("The namespace tree moved while it was being read")
            deepest = max((len(n.path) for n in below), default=len(source))
            if deepest - len(source) + len(to) > self.max_depth:
                raise NamespaceDepthExceeded(f"Namespace exceeds maximum depth of {self.max_depth}: moving "
                                             f"{dotted(source)} to {dotted(to)} would take the namespaces below it "
                                             f"deeper")

            parent_id = parent.id if parent is not None else None
            # a change of case only, in a case-insensitive warehouse: the namespace keeps its claim
            respelt = parent_id == ns.parent_id and name_key(to[-1], matching) == name_key(ns.name, matching)
            claims = [] if respelt else [
                self.ledger.release(NAMESPACE, ns.parent_id or wh.id, ns.name, ns.id, by, matching),
                self.ledger.claim(NAMESPACE, parent_id or wh.id, to[-1], ns.id, "Namespace", by, dotted(to), matching)]
            paths = {ns.id: to}
            ns.move(parent_id, to, by, force)  # refuses a protected namespace without force
            for child in below:
                paths[child.id] = to + tuple(child.path[len(source):])
                child.move(child.parent_id, paths[child.id], by, with_namespace=ns.id)
            if any(t.namespace_id not in paths for t in tabulars):  # renamed out of the tree since it was read
                raise ConcurrentChange("The namespace tree changed while it was being moved")
            for tabular in tabulars:
                tabular.namespace_moved(paths[tabular.namespace_id], ns.id, by)
            at_destination = (namespace_exists(parent.id, parent.path) if parent is not None
                              else warehouse_is_active(wh.id, wh.name))
            self.ledger.append(*claims, ns, *below, *tabulars, conditions=[
                moved_tree_unchanged(wh.id, list(paths), [t.id for t in tabulars]), at_destination])
            return MovedNamespace(ns.id, to, parent_id)

        return self.ledger.retrying(command)

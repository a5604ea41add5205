-- Managed access on a warehouse or namespace (Warehouse.ManagedAccessSet, Namespace.ManagedAccessSet): below it,
-- ownership no longer confers the right to grant. A soft-dropped namespace keeps its flag for its undrop.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS managed_access boolean NOT NULL DEFAULT false;
ALTER TABLE ll_namespaces ADD COLUMN IF NOT EXISTS managed_access boolean NOT NULL DEFAULT false;
ALTER TABLE ll_dropped_namespaces ADD COLUMN IF NOT EXISTS managed_access boolean NOT NULL DEFAULT false;

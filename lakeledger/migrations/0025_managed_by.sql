-- Which control plane manages a warehouse's own settings (Warehouse.ManagedBySet): self-managed or instance-admin.

ALTER TABLE ll_warehouses ADD COLUMN IF NOT EXISTS managed_by text NOT NULL DEFAULT 'self-managed';

-- The OpenFGA store and authorization model every Lakeledger process uses, written by `lakeledger migrate`
-- (lakeledger/authz/setup.py): one row per store name, so that all processes agree on the store id and the model version.
CREATE TABLE IF NOT EXISTS ll_openfga (
    store_name   text PRIMARY KEY,
    endpoint     text NOT NULL,
    store_id     text NOT NULL,
    model_id     text NOT NULL,
    model_digest text NOT NULL,  -- sha256 of the normalized model (lakeledger/authz/model.py), to see that it changed
    written_at   timestamptz NOT NULL DEFAULT now()
);

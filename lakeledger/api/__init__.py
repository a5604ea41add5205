"""HTTP entry points: the Iceberg REST API under /catalog/v1 and the Management API under
/management/v1. Thin: they validate at the edge, call a service or a read-model query, and map
domain errors to the Iceberg ErrorModel."""

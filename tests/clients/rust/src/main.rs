//! A real iceberg-rust client (crates `iceberg` and `iceberg-catalog-rest`) against a Lakeledger catalog:
//! tests/e2e/test_iceberg_rust.py runs it and reads its output, one line per step ("ok STEP detail"), in the format
//! of the iceberg-go program (tests/clients/go). Any unexpected error ends it with "FAIL STEP error" and exit code 1.
//!
//! usage: iceberg-rust-client CATALOG_URI WAREHOUSE

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, TimestampMicrosecondArray,
};
use arrow_cast::display::array_value_to_string;
use futures::TryStreamExt;
use iceberg::arrow::{RecordBatchPartitionSplitter, schema_to_arrow_schema};
use iceberg::io::LocalFsStorageFactory;
use iceberg::spec::{
    DataFileFormat, NestedField, PrimitiveType, Schema, Transform, Type, UnboundPartitionSpec,
};
use iceberg::table::Table;
use iceberg::transaction::{AddColumn, ApplyTransactionAction, Transaction};
use iceberg::writer::base_writer::data_file_writer::DataFileWriterBuilder;
use iceberg::writer::file_writer::ParquetWriterBuilder;
use iceberg::writer::file_writer::location_generator::{
    DefaultFileNameGenerator, DefaultLocationGenerator,
};
use iceberg::writer::file_writer::rolling_writer::RollingFileWriterBuilder;
use iceberg::writer::{IcebergWriter, IcebergWriterBuilder};
use iceberg::{
    Catalog, CatalogBuilder, ErrorKind, NamespaceIdent, TableCreation, TableIdent,
};
use iceberg_catalog_rest::{
    REST_CATALOG_PROP_URI, REST_CATALOG_PROP_WAREHOUSE, RestCatalogBuilder,
};
use parquet::file::properties::WriterProperties;

fn fail(step: &str, err: impl std::fmt::Display) -> ! {
    println!("FAIL {step} {err}");
    std::process::exit(1)
}

fn check<T>(step: &str, result: iceberg::Result<T>) -> T {
    match result {
        Ok(value) => {
            println!("ok {step}");
            value
        }
        Err(err) => fail(step, err),
    }
}

/// A refusal that must be of one kind (a conflict or a not-found the server answered); printed as the iceberg-go
/// program prints the same refusal.
fn expect<T>(step: &str, result: iceberg::Result<T>, want: ErrorKind, said: &str) {
    match result {
        Ok(_) => fail(step, "succeeded where an error was expected"),
        Err(err) if err.kind() == want => println!("ok {step} {said}"),
        Err(err) => fail(step, format!("wrong error: {err}")),
    }
}

fn rows(ids: &[i32], big: &[i64], names: &[&str], ts: &[i64], cents: &[i128], days: &[i32],
        flags: &[Option<bool>], ratios: &[Option<f64>], schema: &Schema) -> RecordBatch {
    let arrow_schema = Arc::new(schema_to_arrow_schema(schema).unwrap_or_else(|e| fail("arrow-schema", e)));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int32Array::from(ids.to_vec())),
        Arc::new(Int64Array::from(big.to_vec())),
        Arc::new(StringArray::from(names.to_vec())),
        Arc::new(TimestampMicrosecondArray::from(ts.to_vec())),
        Arc::new(Decimal128Array::from(cents.to_vec()).with_precision_and_scale(10, 2)
            .unwrap_or_else(|e| fail("decimal", e))),
        Arc::new(Date32Array::from(days.to_vec())),
        Arc::new(BooleanArray::from(flags.to_vec())),
        Arc::new(Float64Array::from(ratios.to_vec())),
    ];
    RecordBatch::try_new(arrow_schema, columns).unwrap_or_else(|e| fail("record-batch", e))
}

/// Writes ``batch`` into one Parquet data file per partition and appends them in one commit.
async fn append(catalog: &dyn Catalog, table: &Table, batch: &RecordBatch) -> iceberg::Result<Table> {
    let metadata = table.metadata();
    let splitter = RecordBatchPartitionSplitter::try_new_with_computed_values(
        metadata.current_schema().clone(), metadata.default_partition_spec().clone())?;
    let mut files = vec![];
    for (key, part) in splitter.split(batch)? {
        let rolling = RollingFileWriterBuilder::new_with_default_file_size(
            ParquetWriterBuilder::new(WriterProperties::default(), metadata.current_schema().clone()),
            table.file_io().clone(),
            DefaultLocationGenerator::new(metadata)?,
            DefaultFileNameGenerator::new("rust".to_string(), None, DataFileFormat::Parquet),
        );
        let mut writer = DataFileWriterBuilder::new(rolling).build(Some(key)).await?;
        writer.write(part).await?;
        files.extend(writer.close().await?);
    }
    let tx = Transaction::new(table);
    let tx = tx.fast_append().add_data_files(files).apply(tx)?;
    tx.commit(catalog).await
}

/// One column's values as text, sorted (a scan's row order is not defined).
fn column_strings(batches: &[RecordBatch], name: &str) -> String {
    let mut out = vec![];
    for batch in batches {
        let column = batch.column_by_name(name).unwrap_or_else(|| fail("column", name));
        for i in 0..column.len() {
            out.push(array_value_to_string(column, i).unwrap_or_else(|e| fail("display", e)));
        }
    }
    out.sort();
    out.join(",")
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: iceberg-rust-client CATALOG_URI WAREHOUSE");
        std::process::exit(2);
    }
    // data files on local disk (the test's file warehouse)
    let catalog = check("connect", RestCatalogBuilder::default()
        .with_storage_factory(Arc::new(LocalFsStorageFactory)).load("lakeledger", HashMap::from([
        (REST_CATALOG_PROP_URI.to_string(), args[1].clone()),
        (REST_CATALOG_PROP_WAREHOUSE.to_string(), args[2].clone()),
    ])).await);

    let outer = NamespaceIdent::new("outer".to_string());
    let inner = NamespaceIdent::from_strs(["outer", "inner level"]).unwrap();
    check("create-namespace", catalog.create_namespace(&outer, HashMap::new()).await);
    check("create-nested-namespace", catalog.create_namespace(
        &inner, HashMap::from([("owner".to_string(), "rust".to_string())])).await);
    expect("create-namespace-again", catalog.create_namespace(&outer, HashMap::new()).await,
           ErrorKind::NamespaceAlreadyExists, "namespace already exists");
    let children = check("list-namespaces", catalog.list_namespaces(Some(&outer)).await);
    let listed: Vec<String> = children.iter().map(|n| n.to_url_string().replace('\u{1f}', ".")).collect();
    println!("namespaces {}", listed.join(","));
    let loaded = check("load-namespace", catalog.get_namespace(&inner).await);
    println!("namespace-properties owner={}", loaded.properties()["owner"]);

    let schema = Schema::builder().with_schema_id(0).with_fields(vec![
        NestedField::optional(1, "id", Type::Primitive(PrimitiveType::Int)).into(),
        NestedField::optional(2, "big", Type::Primitive(PrimitiveType::Long)).into(),
        NestedField::optional(3, "name", Type::Primitive(PrimitiveType::String)).into(),
        NestedField::optional(4, "ts", Type::Primitive(PrimitiveType::Timestamp)).into(),
        NestedField::optional(5, "amount", Type::Primitive(PrimitiveType::Decimal { precision: 10, scale: 2 })).into(),
        NestedField::optional(6, "day", Type::Primitive(PrimitiveType::Date)).into(),
        NestedField::optional(7, "flag", Type::Primitive(PrimitiveType::Boolean)).into(),
        NestedField::optional(8, "ratio", Type::Primitive(PrimitiveType::Double)).into(),
    ]).build().unwrap_or_else(|e| fail("schema", e));
    // no field ids: iceberg-rust leaves them to the catalog
    let spec = check("partition-spec", UnboundPartitionSpec::builder()
        .add_partition_field(6, "day", Transform::Identity)
        .and_then(|b| b.add_partition_field(1, "id_bucket", Transform::Bucket(4)))
        .map(|b| b.build()));
    let ident = TableIdent::new(inner.clone(), "events".to_string());
    let creation = || TableCreation::builder().name("events".to_string()).schema(schema.clone())
        .partition_spec(spec.clone()).build();
    let table = check("create-table", catalog.create_table(&inner, creation()).await);
    let field_ids: Vec<String> = table.metadata().default_partition_spec().fields().iter()
        .map(|f| f.field_id.to_string()).collect();
    println!("partition-fields {} ids {}", field_ids.len(), field_ids.join(","));
    expect("create-table-again", catalog.create_table(&inner, creation()).await,
           ErrorKind::TableAlreadyExists, "table already exists");

    // 2024-01-02T03:04:05, 2024-01-03T00:00, 2024-01-03T12:00 in microseconds; days since 1970-01-01
    let data = rows(&[1, 2, 3], &[10_000_000_000, 20_000_000_000, 30_000_000_000], &["alpha", "beta", "gamma"],
                    &[1_704_164_645_000_000, 1_704_240_000_000_000, 1_704_283_200_000_000], &[1234, 1, 9_999_999_999],
                    &[19724, 19725, 19725], &[Some(true), Some(false), None], &[Some(0.5), Some(1.5), None],
                    table.metadata().current_schema());
    println!("ok arrow-data");
    let extra = rows(&[4], &[-1], &["delta"], &[1_704_067_199_000_000], &[-500], &[19722], &[Some(true)], &[Some(2.0)],
                     table.metadata().current_schema());
    println!("ok arrow-extra-row");
    let table = check("append", append(&catalog, &table, &data).await);
    check("append-again", append(&catalog, &table, &extra).await);

    let loaded = check("load-table", catalog.load_table(&ident).await);
    let scan = loaded.scan().select_all().build().unwrap_or_else(|e| fail("scan", e));
    let stream = scan.to_arrow().await.unwrap_or_else(|e| fail("scan", e));
    let batches: Vec<RecordBatch> = check("scan", stream.try_collect().await);
    println!("rows {} snapshots {}", batches.iter().map(|b| b.num_rows()).sum::<usize>(),
             loaded.metadata().snapshots().count());
    println!("names {}", column_strings(&batches, "name"));
    println!("amounts {}", column_strings(&batches, "amount"));
    println!("days {}", column_strings(&batches, "day"));

    let tx = Transaction::new(&loaded);
    let tx = check("evolve-schema", tx.update_schema()
        .add_column(AddColumn::optional("note", Type::Primitive(PrimitiveType::String)))
        .delete_column("ratio").apply(tx));
    let evolved = check("commit-schema", tx.commit(&catalog).await);
    let names: Vec<String> = evolved.metadata().current_schema().as_struct().fields().iter()
        .map(|f| f.name.clone()).collect();
    println!("columns {}", names.join(","));

    let renamed = TableIdent::new(outer.clone(), "renamed".to_string());
    check("rename-table", catalog.rename_table(&ident, &renamed).await);
    expect("load-old-name", catalog.load_table(&ident).await, ErrorKind::TableNotFound, "table does not exist");
    let again = check("load-new-name", catalog.load_table(&renamed).await);
    println!("renamed-columns {}", again.metadata().current_schema().as_struct().fields().len());
    let tables = check("list-tables", catalog.list_tables(&outer).await);
    let listed: Vec<String> = tables.iter().map(|t| format!("{}.{}", t.namespace().join("."), t.name())).collect();
    println!("tables {}", listed.join(","));

    check("drop-table", catalog.drop_table(&renamed).await);
    expect("drop-table-again", catalog.drop_table(&renamed).await, ErrorKind::TableNotFound, "table does not exist");
    expect("load-dropped", catalog.load_table(&renamed).await, ErrorKind::TableNotFound, "table does not exist");
    expect("load-missing-namespace", catalog.get_namespace(&NamespaceIdent::new("missing".to_string())).await,
           ErrorKind::NamespaceNotFound, "namespace does not exist");
    check("drop-nested-namespace", catalog.drop_namespace(&inner).await);
    check("drop-namespace", catalog.drop_namespace(&outer).await);
    println!("done");
}

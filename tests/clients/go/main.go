// A real iceberg-go client against a Lakeledger catalog: tests/e2e/test_iceberg_go.py runs it and reads its output,
// one line per step ("ok STEP detail"). Any unexpected error ends it with "FAIL STEP error" and exit code 1.
//
// usage: icebergclient CATALOG_URI WAREHOUSE
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

func fail(step string, err error) {
	fmt.Printf("FAIL %s %v\n", step, err)
	os.Exit(1)
}

func check(step string, err error) {
	if err != nil {
		fail(step, err)
	}
	fmt.Printf("ok %s\n", step)
}

// expect reports an error that must be the given sentinel (a conflict or a not-found the server answered).
func expect(step string, err error, want error) {
	if err == nil {
		fail(step, errors.New("succeeded where an error was expected"))
	}
	if !errors.Is(err, want) {
		fail(step, fmt.Errorf("wrong error: %w", err))
	}
	fmt.Printf("ok %s %v\n", step, want)
}

var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "big", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
}, nil)

const rows = `[
 {"id": 1, "big": 10000000000, "name": "alpha", "ts": "2024-01-02T03:04:05", "amount": "12.34", "day": "2024-01-02", "flag": true, "ratio": 0.5},
 {"id": 2, "big": 20000000000, "name": "beta", "ts": "2024-01-03T00:00:00", "amount": "0.01", "day": "2024-01-03", "flag": false, "ratio": 1.5},
 {"id": 3, "big": 30000000000, "name": "gamma", "ts": "2024-01-03T12:00:00", "amount": "99999999.99", "day": "2024-01-03", "flag": null, "ratio": null}
]`

const extraRow = `[{"id": 4, "big": -1, "name": "delta", "ts": "2023-12-31T23:59:59", "amount": "-5.00", "day": "2023-12-31", "flag": true, "ratio": 2.0}]`

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: icebergclient CATALOG_URI WAREHOUSE")
		os.Exit(2)
	}
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "lakeledger", os.Args[1], rest.WithWarehouseLocation(os.Args[2]))
	check("connect", err)

	outer := catalog.ToIdentifier("outer")
	inner := catalog.ToIdentifier("outer", "inner level")
	// nil properties: iceberg-go sends `"properties": null`
	check("create-namespace", cat.CreateNamespace(ctx, outer, nil))
	check("create-nested-namespace", cat.CreateNamespace(ctx, inner, iceberg.Properties{"owner": "go"}))
	expect("create-namespace-again", cat.CreateNamespace(ctx, outer, nil), catalog.ErrNamespaceAlreadyExists)
	children, err := cat.ListNamespaces(ctx, outer)
	check("list-namespaces", err)
	listed := []string{}
	for _, child := range children {
		listed = append(listed, strings.Join(child, "."))
	}
	fmt.Printf("namespaces %s\n", strings.Join(listed, ","))
	// nil removals, then nil updates: sent as `null`
	_, err = cat.UpdateNamespaceProperties(ctx, inner, nil, iceberg.Properties{"k": "v"})
	check("set-namespace-property", err)
	_, err = cat.UpdateNamespaceProperties(ctx, inner, []string{"owner"}, nil)
	check("remove-namespace-property", err)
	props, err := cat.LoadNamespaceProperties(ctx, inner)
	check("load-namespace", err)
	fmt.Printf("namespace-properties k=%s owner=%q\n", props["k"], props["owner"])

	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "big", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 5, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "flag", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 8, Name: "ratio", Type: iceberg.PrimitiveTypes.Float64},
	)
	spec, err := iceberg.NewPartitionSpecOpts(
		iceberg.AddPartitionFieldBySourceID(6, "day", iceberg.IdentityTransform{}, schema, nil),
		iceberg.AddPartitionFieldBySourceID(1, "id_bucket", iceberg.BucketTransform{NumBuckets: 4}, schema, nil),
	)
	check("partition-spec", err)
	ident := catalog.ToIdentifier("outer", "inner level", "events")
	tbl, err := cat.CreateTable(ctx, ident, schema, catalog.WithPartitionSpec(&spec))
	check("create-table", err)
	created := tbl.Spec()
	fmt.Printf("partition-fields %d\n", created.NumFields())
	_, err = cat.CreateTable(ctx, ident, schema)
	expect("create-table-again", err, catalog.ErrTableAlreadyExists)

	data, err := array.TableFromJSON(memory.DefaultAllocator, arrowSchema, []string{rows})
	check("arrow-data", err)
	defer data.Release()
	extra, err := array.TableFromJSON(memory.DefaultAllocator, arrowSchema, []string{extraRow})
	check("arrow-extra-row", err)
	defer extra.Release()
	tbl, err = tbl.AppendTable(ctx, data, 1024, nil)
	check("append", err)

	// two writers from the same base: the second append is refused (iceberg-go does not retry by default)
	stale, err := cat.LoadTable(ctx, ident)
	check("load-stale-copy", err)
	tbl, err = tbl.AppendTable(ctx, extra, 1024, nil)
	check("append-again", err)
	_, err = stale.AppendTable(ctx, extra, 1024, nil)
	expect("append-from-stale-copy", err, table.ErrCommitFailed)

	loaded, err := cat.LoadTable(ctx, ident)
	check("load-table", err)
	read, err := loaded.Scan().ToArrowTable(ctx)
	check("scan", err)
	fmt.Printf("rows %d snapshots %d\n", read.NumRows(), len(loaded.Metadata().Snapshots()))
	fmt.Printf("names %s\n", strings.Join(columnStrings(read, "name"), ","))
	fmt.Printf("amounts %s\n", strings.Join(columnStrings(read, "amount"), ","))
	fmt.Printf("days %s\n", strings.Join(columnStrings(read, "day"), ","))
	read.Release()

	tx := loaded.NewTransaction()
	check("evolve-schema", tx.UpdateSchema(true, false).
		AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).
		DeleteColumn([]string{"ratio"}).Commit())
	evolved, err := tx.Commit(ctx)
	check("commit-schema", err)
	names := []string{}
	for _, f := range evolved.Schema().Fields() {
		names = append(names, f.Name)
	}
	fmt.Printf("columns %s\n", strings.Join(names, ","))

	renamed := catalog.ToIdentifier("outer", "renamed")
	_, err = cat.RenameTable(ctx, ident, renamed)
	check("rename-table", err)
	_, err = cat.LoadTable(ctx, ident)
	expect("load-old-name", err, catalog.ErrNoSuchTable)
	again, err := cat.LoadTable(ctx, renamed)
	check("load-new-name", err)
	fmt.Printf("renamed-columns %d\n", len(again.Schema().Fields()))
	tables := []string{}
	for id, err := range cat.ListTables(ctx, outer) {
		check("list-tables", err)
		tables = append(tables, strings.Join(id, "."))
	}
	fmt.Printf("tables %s\n", strings.Join(tables, ","))

	check("drop-table", cat.DropTable(ctx, renamed))
	expect("drop-table-again", cat.DropTable(ctx, renamed), catalog.ErrNoSuchTable)
	_, err = cat.LoadTable(ctx, renamed)
	expect("load-dropped", err, catalog.ErrNoSuchTable)
	_, err = cat.LoadNamespaceProperties(ctx, catalog.ToIdentifier("missing"))
	expect("load-missing-namespace", err, catalog.ErrNoSuchNamespace)
	check("drop-nested-namespace", cat.DropNamespace(ctx, inner))
	check("drop-namespace", cat.DropNamespace(ctx, outer))
	fmt.Println("done")
}

// columnStrings is one column's values as text, sorted (a scan's row order is not defined).
func columnStrings(tbl arrow.Table, name string) []string {
	idx := tbl.Schema().FieldIndices(name)
	out := []string{}
	for _, chunk := range tbl.Column(idx[0]).Data().Chunks() {
		for i := 0; i < chunk.Len(); i++ {
			if decimals, ok := chunk.(*array.Decimal128); ok { // with its scale's digits, as Iceberg shows decimals
				scale := decimals.DataType().(*arrow.Decimal128Type).Scale
				out = append(out, decimals.Value(i).ToString(scale))
				continue
			}
			out = append(out, chunk.ValueStr(i))
		}
	}
	sort.Strings(out)
	return out
}

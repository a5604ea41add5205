package org.apache.iceberg.rest;

import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.util.PropertyUtil;
import org.junit.jupiter.api.BeforeEach;

/**
 * Iceberg's RESTCompatibilityKitCatalogTests, unchanged, with nested namespaces and names with slashes on.
 *
 * <p>The kit reads every capability of CatalogTests from a property except two. Nested namespaces it leaves at
 * CatalogTests' default (false), and so skips the nested-namespace tests; names with slashes it turns off from 1.11
 * on, for its own in-process Jetty server, which rejects them (1.10 left them on, and Lakeledger passed them).
 * Lakeledger serves both, so the properties rck.supports-nested-namespaces and rck.supports-names-with-slashes (true
 * in pom.xml) turn them on. This class only adds tests to the run, and the clean-up those tests need; it overrides
 * no test and no other hook.
 */
public class LakeledgerCatalogTests extends RESTCompatibilityKitCatalogTests {
  static final String RCK_SUPPORTS_NESTED_NAMESPACES = "rck.supports-nested-namespaces";
  static final String RCK_SUPPORTS_NAMES_WITH_SLASHES = "rck.supports-names-with-slashes";
  // The namespace the nested-namespace tests share. The kit purges its own test namespaces before each test but not
  // this one, since upstream never runs those tests: testListNestedNamespaces leaves it behind, and
  // testDropNamespaceWithNestedNamespace (Iceberg 1.11) starts by asserting that it does not exist.
  static final Namespace NESTED_TESTS_PARENT = Namespace.of("parent");

  @Override
  protected boolean supportsNestedNamespaces() {
    return PropertyUtil.propertyAsBoolean(
        catalog().properties(), RCK_SUPPORTS_NESTED_NAMESPACES, super.supportsNestedNamespaces());
  }

  @Override
  protected boolean supportsNamesWithSlashes() {
    return PropertyUtil.propertyAsBoolean(
        catalog().properties(), RCK_SUPPORTS_NAMES_WITH_SLASHES, super.supportsNamesWithSlashes());
  }

  @BeforeEach
  void purgeNestedNamespaceTestEntries() {
    if (supportsNestedNamespaces()) {
      dropTree(NESTED_TESTS_PARENT);
    }
  }

  private void dropTree(Namespace namespace) {
    RESTCatalog catalog = catalog();
    if (!catalog.namespaceExists(namespace)) {
      return;
    }
    catalog.listNamespaces(namespace).forEach(this::dropTree);
    catalog.listTables(namespace).forEach(catalog::dropTable);
    catalog.listViews(namespace).forEach(catalog::dropView);
    catalog.dropNamespace(namespace);
  }
}

package org.apache.iceberg.rest;

import org.apache.iceberg.util.PropertyUtil;

/**
 * Iceberg's RESTCompatibilityKitCatalogTests, unchanged, with nested namespaces on.
 *
 * <p>The kit reads every capability of CatalogTests from a property except this one, which it leaves at
 * CatalogTests' default (false) and so skips the nested-namespace tests. Lakeledger serves nested namespaces,
 * so the property rck.supports-nested-namespaces (true in pom.xml) turns them on. This class only adds tests to
 * the run; it overrides no test and no other hook.
 */
public class LakeledgerCatalogTests extends RESTCompatibilityKitCatalogTests {
  static final String RCK_SUPPORTS_NESTED_NAMESPACES = "rck.supports-nested-namespaces";

  @Override
  protected boolean supportsNestedNamespaces() {
    return PropertyUtil.propertyAsBoolean(
        catalog().properties(), RCK_SUPPORTS_NESTED_NAMESPACES, super.supportsNestedNamespaces());
  }
}

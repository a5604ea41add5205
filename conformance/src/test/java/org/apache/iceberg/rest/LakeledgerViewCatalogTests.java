package org.apache.iceberg.rest;

/**
 * Iceberg's RESTCompatibilityKitViewCatalogTests, unchanged: a subclass only so that Surefire runs it from this
 * project (the kit's classes live in a dependency's test jar). Every hook is the kit's own, read from the
 * rck.* properties set in pom.xml.
 */
public class LakeledgerViewCatalogTests extends RESTCompatibilityKitViewCatalogTests {}

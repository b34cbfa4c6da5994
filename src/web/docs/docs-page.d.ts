/**
 * What the docs page's scripts share on `window`: src/web/docs-routes.ts sets `plinthDocsConfig`
 * before plinth-docs.js, Swagger UI's bundle sets `SwaggerUIBundle`, and plinth-docs.js keeps the
 * UI it answers as `plinthUi` for plinth-try-it.js.
 */

/** Plinth's header on the docs page (docs-routes.ts). */
export interface DocsConfig {
  home?: string
  homeLabel?: string
  logo?: string
  links: Array<[label: string, href: string]>
}

/** The part of Swagger UI's instance the try-it panel uses. */
export interface SwaggerUi {
  /** Stores a credential for a security scheme as "Authorize" would; null when the scheme is not known yet. */
  preauthorizeApiKey(scheme: string, value: string): unknown
}

declare global {
  interface Window {
    plinthDocsConfig?: DocsConfig
    SwaggerUIBundle?: (options: unknown) => SwaggerUi
    plinthUi?: SwaggerUi
  }
}

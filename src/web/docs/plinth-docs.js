// @ts-check
// Plinth's additions to Swagger UI at /docs, loaded after Swagger UI's own scripts and before
// the page's load event, when its initializer starts the UI: Plinth's header (logo, a link back
// to the console, the error table, the ledger) and a handle on the UI for plinth-try-it.js.
;(() => {
  /** @type {import('./docs-page').DocsConfig} */
  const config = window.plinthDocsConfig ?? { links: [] }

  // The initializer calls SwaggerUIBundle(config) on load; keep what it answers (window.plinthUi).
  const original = window.SwaggerUIBundle
  if (typeof original === 'function') {
    window.SwaggerUIBundle = Object.assign((/** @type {unknown} */ options) => {
      const ui = original(options)
      window.plinthUi = ui
      document.dispatchEvent(new CustomEvent('plinth:ui'))
      return ui
    }, original)
  }

  const header = document.createElement('header')
  header.className = 'plinth-header'
  const home = document.createElement('a')
  home.href = config.home ?? '/'
  const logo = document.createElement('img')
  // As before typing: no logo in the config gives the src "undefined".
  logo.src = String(config.logo)
  logo.alt = config.homeLabel ?? 'Plinth'
  home.append(logo)
  const nav = document.createElement('nav')
  nav.className = 'plinth-nav'
  nav.setAttribute('aria-label', 'Plinth')
  for (const [label, href] of config.links) {
    const link = document.createElement('a')
    link.href = href
    link.textContent = label
    nav.append(link)
  }
  header.append(home, nav)
  const root = document.getElementById('swagger-ui')
  document.body.insertBefore(header, root)
})()

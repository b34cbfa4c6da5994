/**
 * The layering of src/ and bench/, checked by `npm run lint` (ARCHITECTURE.md, "Floors").
 *
 * Floors, lowest first; a module imports its own floor or a lower one, never a higher one:
 *
 *   1. db          src/db/ (the schema, migrations, the PGlite and pg backends)
 *   2. lib, clock  src/lib/, src/clock/, src/config.ts (leaf helpers, the platform clock, configuration)
 *   3. core        src/core/ (errors, principals, scopes, cursors, shared schemas)
 *   4. http        src/http/ (the Fastify side every route shares)
 *   5. domains     the engine first: src/ledger/; then audit, identity, apps, payments, ads, notifications,
 *                  request-log, accounts, views; then the surfaces that read the others: sandbox, admin, portal, system,
 *                  console, web, client
 *   6. app         src/app.ts and its composition modules (src/app/)
 *   7. entries     src/server.ts, src/start.ts, src/index.ts, src/cli/
 *
 * bench/ sits above all of src (it may import any of it); nothing in src imports bench/ or test/.
 *
 * Domains import each other only along the ports listed in DOMAIN_PORTS, which is also what keeps
 * them from forming a circle: the ledger is the engine and imports no other domain; the business
 * domains reach the ledger (wallets, keys, the payments hook) and, for apps and ads, the port of one
 * neighbour; the surfaces (sandbox drives and inspects the whole platform, the client and the
 * console sit on the API) may import any business domain, never the other way round.
 *
 * Inside a domain, logic (services, repositories, pure rules) never imports src/http/: only the
 * Fastify side of a domain does, that is its route modules and its Fastify hooks and plugins.
 *
 * The browser code (JavaScript served as written, ARCHITECTURE.md, "The browser code") has floors
 * of its own and never imports the server's modules:
 *
 *   1. api     src/web/api/ (the API's types, generated from its OpenAPI document, and the fetch under both pages)
 *   2. ui      src/web/ui/ (the UI layer: DOM, dialogs, focus, forms, tables, toasts, formats)
 *   3. pages   src/web/platform/ (the platform page) and src/console/public/ (the console): each imports
 *              the UI layer and the API client, never the other page
 *
 * The SDK (src/web/sdk/) and the docs helpers (src/web/docs/) are served as single scripts: they import nothing.
 */
const DB = '^src/db/'
const LIB = '^src/(lib|clock)/|^src/config[.]ts$'
const CORE = '^src/core/'
const HTTP = '^src/http/'
const ENGINE = ['ledger']
const BUSINESS = ['audit', 'identity', 'apps', 'payments', 'ads', 'notifications', 'request-log', 'accounts', 'views']
const SURFACES = ['sandbox', 'admin', 'portal', 'system', 'console', 'web', 'client']
const ALL_DOMAINS = [...ENGINE, ...BUSINESS, ...SURFACES]
const DOMAINS = `^src/(${ALL_DOMAINS.join('|')})/`
const APP = '^src/app([.]ts$|/)'
const ENTRIES = '^src/(server|start|index)[.]ts$|^src/cli/'

/** Which other domains each domain may import (its ports); anything else is a violation. */
const DOMAIN_PORTS = {
  ledger: [],
  // The hash-chained audit log: appended in the transaction of what it records, by accounts, admin and portal.
  audit: [],
  identity: ['ledger'],
  apps: ['ledger', 'identity'],
  payments: ['ledger'],
  ads: ['apps'],
  notifications: [],
  'request-log': [],
  // Production's accounts sit on identity (users, consent), apps (the directory) and payments (the user pays).
  accounts: ['ledger', 'identity', 'apps', 'payments', 'audit'],
  sandbox: [...ENGINE, ...BUSINESS],
  // The read models of payments and apps (search, a payment's timeline, why a user is blocked), shared by the sandbox and the portal.
  views: ['payments'],
  // The operator's commands drive the platform as the sandbox does, through its business domains.
  admin: [...ENGINE, ...BUSINESS],
  // The developer portal: the business domains.
  portal: [...ENGINE, ...BUSINESS],
  system: [],
  console: [],
  web: [],
  client: [],
}

/**
 * The Fastify side of a domain, which may import src/http/: route modules and what a domain's route
 * modules share (the portal's tag, role and membership check), the /ledger (Horizon) plugin, and
 * the hooks a domain adds to every request (request log, metrics, injected faults).
 */
const BROWSER_API = '^src/web/api/'
const BROWSER_UI = '^src/web/ui/'
const PLATFORM_PAGE = '^src/web/platform/'
const CONSOLE_PAGE = '^src/console/public/'
const SINGLE_SCRIPTS = '^src/web/(sdk|docs)/'
const BROWSER = [BROWSER_API, BROWSER_UI, PLATFORM_PAGE, CONSOLE_PAGE, SINGLE_SCRIPTS].join('|')

const FASTIFY_SIDE =
  '-routes[.]ts$|-route-shared[.]ts$|^src/ledger/horizon/|^src/request-log/request-log[.]ts$|^src/system/metrics[.]ts$|/fault-injection[.]ts$'

const upward = (name, from, to, comment) => ({ name, comment, severity: 'error', from: { path: from }, to: { path: to } })

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A cycle makes two modules one: break it with a types module or a port.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    upward('db-is-the-ground-floor', DB, [LIB, CORE, HTTP, DOMAINS, APP, ENTRIES].join('|'), 'src/db/ imports nothing above it.'),
    upward('lib-below-core', LIB, [CORE, HTTP, DOMAINS, APP, ENTRIES].join('|'), 'lib/, clock/ and config.ts import only db/.'),
    upward('core-below-http', CORE, [HTTP, DOMAINS, APP, ENTRIES].join('|'), 'core/ is the vocabulary below http/ and the domains.'),
    upward('http-below-domains', HTTP, [DOMAINS, APP, ENTRIES].join('|'), 'http/ is the Fastify side every domain shares.'),
    upward('domains-below-app', DOMAINS, [APP, ENTRIES].join('|'), 'Domains are wired by the app, never the other way.'),
    upward('app-below-entries', APP, ENTRIES, 'The app is built by the entry points.'),
    {
      name: 'domain-logic-not-on-http',
      comment: 'Services, repositories and pure rules use core/ (ApiError, principals), never src/http/.',
      severity: 'error',
      from: { path: DOMAINS, pathNot: FASTIFY_SIDE },
      to: { path: HTTP },
    },
    ...Object.entries(DOMAIN_PORTS).map(([domain, ports]) => ({
      name: `domain-ports-${domain}`,
      comment: `${domain}/ imports ${ports.length === 0 ? 'no other domain' : `only the domains ${ports.join(', ')}`}.`,
      severity: 'error',
      from: { path: `^src/${domain}/`, pathNot: BROWSER },
      to: {
        path: DOMAINS,
        pathNot: `^src/(${[domain, ...ports].join('|')})/`,
      },
    })),
    upward(
      'browser-api-below-ui',
      BROWSER_API,
      [BROWSER_UI, PLATFORM_PAGE, CONSOLE_PAGE].join('|'),
      'src/web/api/ imports no UI and no page.',
    ),
    upward(
      'browser-ui-below-pages',
      BROWSER_UI,
      [PLATFORM_PAGE, CONSOLE_PAGE].join('|'),
      'The UI layer serves both pages and knows neither.',
    ),
    upward(
      'platform-page-not-console',
      PLATFORM_PAGE,
      CONSOLE_PAGE,
      'The platform page imports the UI layer and the API client, never the console.',
    ),
    upward(
      'console-not-platform-page',
      CONSOLE_PAGE,
      PLATFORM_PAGE,
      'The console imports the UI layer and the API client, never the platform page.',
    ),
    upward('single-scripts-import-nothing', SINGLE_SCRIPTS, '^src/', 'The SDK and the docs helpers are served as single scripts.'),
    {
      name: 'browser-not-on-server',
      comment: 'The browser code runs in the page: it imports no server module (a .ts file), only the browser folders.',
      severity: 'error',
      from: { path: BROWSER },
      to: { path: '^src/', pathNot: `${BROWSER}` },
    },
    {
      name: 'src-not-on-bench',
      comment: 'The product does not import the benchmarks.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^bench/' },
    },
    {
      name: 'no-test-code',
      comment:
        'What ships never imports test code. The benchmarks are development tools like the tests: the two that measure an ' +
        'in-process platform (bench/sandbox-state.ts, bench/metrics-cost.ts) start it with the test helper rather than a copy of it.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^test/' },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing is a typo or a missing dependency.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // The generated API types are read by the type checker only (23,000 lines of types, no imports).
    exclude: { path: '^src/web/api/openapi[.]d[.]ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: {
      text: { highlightFocused: true },
    },
  },
}

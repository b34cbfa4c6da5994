import type { FastifyInstance, FastifyRequest } from 'fastify'
import { ApiError } from '../../core/errors.js'
import { escapeHtml } from '../markdown.js'

interface HubDemo {
  appId: string
  appName: string
  userId: string
  username: string
}

export interface HubOptions {
  /** The demo app and user, or undefined after a reset with the empty seed. */
  demo: () => Promise<HubDemo | undefined>
  version: string
}

/** The hub's page runs no script and loads only the reference's stylesheet and logo. */
const HUB_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy':
    "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cache-control': 'no-cache',
}

/** The weight the Accept header gives a media type (exact, `type/*` or `*\/*`; 0 when absent). */
function weight(accept: string, type: string): number {
  let best = 0
  for (const part of accept.toLowerCase().split(',')) {
    const [range = '', ...params] = part.split(';').map((s) => s.trim())
    const matches = range === type || range === `${type.split('/')[0]}/*` || range === '*/*'
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1)
    if (matches && Number.isFinite(q)) best = Math.max(best, range === type ? q + 1e-3 : q)
  }
  return best
}

/** A browser asks for text/html by name; curl (`*\/*`) and JSON clients keep getting JSON. */
function wantsHtml(request: FastifyRequest): boolean {
  const accept = request.headers.accept ?? ''
  if (!/text\/html/i.test(accept)) return false
  const html = weight(accept, 'text/html')
  return html > 0 && html >= weight(accept, 'application/json')
}

const LINKS: Array<[href: string, label: string, what: string]> = [
  ['/console/', 'Developer console', 'apps, server API keys, users, payments, faults and the request log'],
  ['/sandbox/', 'Sandbox browser', 'be one of your users: sign in to apps, consent, approve and pay'],
  ['/docs', 'API reference', 'every endpoint, with Try it out'],
  ['/docs/errors', 'Error codes', 'every error the platform answers'],
  ['/ledger', 'Ledger (Horizon root)', 'the Horizon-compatible API that stellar-sdk and pi-backend call'],
]

function page(demo: HubDemo | undefined, version: string): string {
  const links = LINKS.map(([href, label, what]) => `<li><a href="${href}">${escapeHtml(label)}</a>: ${escapeHtml(what)}</li>`).join('\n')
  const demoBlock =
    demo === undefined
      ? '<p>No demo app: the sandbox was reset with the empty seed. Create an app in the <a href="/console/">console</a>.</p>'
      : `<dl class="plinth-demo">
<dt>Name</dt><dd><a href="/console/#/apps/${encodeURIComponent(demo.appId)}">${escapeHtml(demo.appName)}</a></dd>
<dt>App id</dt><dd><code>${escapeHtml(demo.appId)}</code></dd>
<dt>Demo user</dt><dd>${escapeHtml(demo.username)} (<code>${escapeHtml(demo.userId)}</code>)</dd>
</dl>
<p>Its server API key was shown once, at the first start; make another in the console or with <code>npx plinth keys create --app ${escapeHtml(demo.appId)}</code>.</p>`
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plinth sandbox</title>
<link rel="stylesheet" href="/docs/static/theme/plinth-docs.css">
<link rel="icon" href="/docs/static/theme/plinth-logo.svg" type="image/svg+xml">
</head>
<body class="plinth-page">
<header class="plinth-header"><a href="/"><img src="/docs/static/theme/plinth-logo.svg" alt="Plinth"></a></header>
<main>
<h1>Plinth sandbox</h1>
<p>Version ${escapeHtml(version)}. Everything a developer needs is one link away:</p>
<ul class="plinth-hub">
${links}
</ul>
<h2>Demo app</h2>
${demoBlock}
</main>
</body>
</html>
`
}

/**
 * `GET /` in sandbox mode: for a browser, a page that links the console, the sandbox browser,
 * the API reference and the ledger, and names the demo app; for anything else the JSON 404 it
 * always answered (production serves the platform's own page at `/` instead).
 */
export async function hubRoutes(app: FastifyInstance, options: HubOptions): Promise<void> {
  app.get('/', { schema: { hide: true } }, async (request, reply) => {
    reply.header('vary', 'accept')
    if (!wantsHtml(request)) return reply.code(404).send(new ApiError('not_found', 'No route GET /').toBody())
    const html = page(await options.demo(), options.version)
    return reply.headers(HUB_HEADERS).type('text/html; charset=utf-8').send(html)
  })
}

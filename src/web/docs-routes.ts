import { readFile } from 'node:fs/promises'
import type { Readable } from 'node:stream'
import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Mode } from '../config.js'
import { SECURITY_SCHEMES } from '../http/openapi.js'
import { escapeHtml, markdownToHtml } from './markdown.js'
import { webDir } from './web-dir.js'

/**
 * The API reference: the OpenAPI document of every route declared after it (GET /v2/openapi.json,
 * and /docs/json for the UI), Swagger UI at /docs in Plinth's colours, and the error table
 * (docs/errors.md) rendered at /docs/errors. Everything under /docs is served compressed (br or
 * gzip, as the client accepts), each body compressed once per process and kept.
 */
interface ApiDocsOptions {
  publicUrl: string
  mode: Mode
  version: string
}

/**
 * Headers of the pages under /docs. Swagger UI runs only its own files and Plinth's (no inline
 * script); "Try it out" calls this origin or the public URL's; nobody may frame it. Its one inline
 * style is the <style> of its SVG logo, allowed by hash (its top bar is hidden; were the hash to
 * change, only that logo's colours would go).
 */
const SWAGGER_LOGO_STYLE = "'sha256-RL3ie0nH+Lzz2YNqQN83mnU0J1ot4QL7b99vMdIX99w='"
function docsHeaders(publicUrl: string): Readonly<Record<string, string>> {
  return {
    'content-security-policy':
      `default-src 'self'; script-src 'self'; script-src-attr 'none'; style-src 'self' ${SWAGGER_LOGO_STYLE}; ` +
      `img-src 'self' data:; font-src 'self' data:; connect-src 'self' ${new URL(publicUrl).origin}; object-src 'none'; ` +
      "base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
    'x-frame-options': 'DENY',
  }
}

/** The error table's page: no script at all. */
const ERRORS_PAGE_CSP = "default-src 'none'; style-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const THEME = '/docs/static/theme'
const ROOT = new URL('../../', import.meta.url)

/** The links of Plinth's header on /docs and /docs/errors: the console first in sandbox mode. */
function headerLinks(mode: Mode): Array<[label: string, href: string]> {
  const common: Array<[string, string]> = [
    ['API reference', '/docs'],
    ['Error codes', '/docs/errors'],
    ['Ledger (Horizon)', '/ledger'],
  ]
  return mode === 'sandbox'
    ? [['Console', '/console/'], ['Sandbox', '/sandbox/'], ...common, ['All links', '/']]
    : [['Plinth', '/'], ...common]
}

export async function registerApiDocs(app: FastifyInstance, options: ApiDocsOptions): Promise<void> {
  const { publicUrl, mode } = options
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Plinth Platform API',
        version: options.version,
        description:
          'The server API of the app platform (`/v2`), its Horizon-style ledger and, in sandbox mode, the sandbox API. ' +
          `Errors answer \`{"error": code, "error_message": text}\`; every code is in [the error table](${publicUrl}/docs/errors).`,
      },
      servers: [{ url: publicUrl }],
      components: { securitySchemes: SECURITY_SCHEMES },
    },
  })

  const web = `${webDir()}docs/`
  const [css, docsJs, tryItJs, logo, errorsMd] = await Promise.all([
    readFile(`${web}plinth-docs.css`, 'utf8'),
    readFile(`${web}plinth-docs.js`, 'utf8'),
    readFile(`${web}plinth-try-it.js`, 'utf8'),
    readFile(`${web}logo.svg`),
    readFile(new URL('docs/errors.md', ROOT), 'utf8'),
  ])
  const links = headerLinks(mode)
  const config = { home: mode === 'sandbox' ? '/console/' : '/', homeLabel: 'Plinth', logo: `${THEME}/plinth-logo.svg`, links }
  const headers = docsHeaders(publicUrl)
  const errorsPage = renderErrorsPage(errorsMd, links, config.home)

  // Encapsulated: the headers and the compression cover /docs only.
  await app.register(async (docs) => {
    docs.addHook('onRequest', async (_request, reply) => {
      reply.headers(headers)
    })
    docs.addHook('onSend', compressor())

    await docs.register(swaggerUi, {
      routePrefix: '/docs',
      uiConfig: { docExpansion: 'list', deepLinking: true },
      // Try it out from a page opened at another address than PLINTH_PUBLIC_URL (127.0.0.1 for
      // localhost, a tunnel): the page's own origin is offered second, in the Servers menu.
      transformSpecification: (spec: Record<string, unknown>) => ({
        ...spec,
        servers: [...((spec.servers as unknown[] | undefined) ?? []), { url: '/', description: 'The origin this page was opened at' }],
      }),
      logo: { type: 'image/svg+xml', content: logo, href: config.home },
      theme: {
        title: 'Plinth API reference',
        css: [{ filename: 'plinth-docs.css', content: css }],
        // The try-it selector reads the sandbox API: never served in production.
        js: [
          { filename: 'plinth-docs.js', content: `window.plinthDocsConfig = ${JSON.stringify(config)};\n${docsJs}` },
          ...(mode === 'sandbox' ? [{ filename: 'plinth-try-it.js', content: tryItJs }] : []),
        ],
        favicon: [{ filename: 'plinth-logo.svg', rel: 'icon', sizes: 'any', type: 'image/svg+xml', content: logo }],
      },
    })

    docs.get('/docs/errors', { schema: { hide: true } }, async (_request, reply) =>
      reply.header('content-security-policy', ERRORS_PAGE_CSP).type('text/html; charset=utf-8').send(errorsPage),
    )
  })
}

function renderErrorsPage(markdown: string, links: Array<[string, string]>, home: string): string {
  const nav = links.map(([label, href]) => `<a href="${escapeHtml(href)}">${escapeHtml(label)}</a>`).join('')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Plinth error codes</title>
<link rel="stylesheet" href="${THEME}/plinth-docs.css">
<link rel="icon" href="${THEME}/plinth-logo.svg" type="image/svg+xml">
</head>
<body class="plinth-page">
<header class="plinth-header"><a href="${escapeHtml(home)}"><img src="${THEME}/plinth-logo.svg" alt="Plinth"></a><nav class="plinth-nav" aria-label="Plinth">${nav}</nav></header>
<main>
${markdownToHtml(markdown)}
</main>
</body>
</html>
`
}

/** Types worth compressing; images other than SVG and fonts already are. */
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|problem\+json)|image\/svg\+xml)/
const MIN_BYTES = 1024

type Encoding = 'br' | 'gzip'
const compressWith: Record<Encoding, (body: Buffer) => Promise<Buffer>> = {
  // Quality 9: Swagger UI's 1.7 MB bundle becomes 387 KB in about 2 s, once; 11 saves 9% more in 8 s.
  br: (body) => promisify(brotliCompress)(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 9 } }),
  gzip: (body) => promisify(gzip)(body, { level: 9 }),
}

/** The client's choice: br over gzip; `;q=0` refuses one. */
export function chooseEncoding(header: string | undefined): Encoding | undefined {
  if (header === undefined) return undefined
  const accepted = new Set<string>()
  for (const part of header.toLowerCase().split(',')) {
    const [name = '', ...params] = part.split(';').map((s) => s.trim())
    const q = params.find((p) => p.startsWith('q='))
    if (q === undefined || Number(q.slice(2)) > 0) accepted.add(name)
  }
  if (accepted.has('br')) return 'br'
  if (accepted.has('gzip') || accepted.has('*')) return 'gzip'
  return undefined
}

async function bufferOf(payload: unknown): Promise<Buffer | undefined> {
  if (typeof payload === 'string') return Buffer.from(payload)
  if (Buffer.isBuffer(payload)) return payload
  if (payload !== null && typeof payload === 'object' && typeof (payload as Readable).pipe === 'function') {
    const chunks: Buffer[] = []
    for await (const chunk of payload as Readable) chunks.push(Buffer.from(chunk as Buffer))
    return Buffer.concat(chunks)
  }
  return undefined
}

/**
 * An onSend hook that compresses the 200 answers under /docs. Every body there is the same for
 * the life of the process (Swagger UI's files, the theme, the document, the error table), so each
 * is compressed once, by path and encoding: the key set is bounded by the files that exist (only
 * 200s are kept, the query is ignored).
 */
function compressor() {
  const cache = new Map<string, Promise<Buffer>>()
  return async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    if (reply.statusCode !== 200 || !COMPRESSIBLE.test(String(reply.getHeader('content-type') ?? ''))) return payload
    reply.header('vary', 'accept-encoding')
    const encoding = chooseEncoding(request.headers['accept-encoding'])
    if (encoding === undefined) return payload
    const key = `${encoding} ${request.url.split('?')[0]}`
    let compressed = cache.get(key)
    if (compressed === undefined) {
      const body = await bufferOf(payload)
      if (body === undefined || body.length < MIN_BYTES) return body ?? payload
      compressed = compressWith[encoding](body)
      cache.set(key, compressed)
      // A failed compression is not kept: the next request tries again.
      compressed.catch(() => cache.delete(key))
    } else if (payload !== null && typeof (payload as Readable).destroy === 'function') {
      ;(payload as Readable).destroy()
    }
    const body = await compressed
    // The ETag and Last-Modified of @fastify/static name the file as stored, not this encoding of it.
    reply.removeHeader('content-length').removeHeader('etag').removeHeader('last-modified').removeHeader('accept-ranges')
    reply.header('content-encoding', encoding)
    return body
  }
}

import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { webDir } from './web-dir.js'

interface Asset {
  body: string
  type: string
  etag: string
}

const asset = (body: string, type: string): Asset => ({
  body,
  type,
  etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
})

/**
 * The client SDK, in both modes: one source (`src/web/sdk/pi-sdk-checks.js` and `pi-sdk-core.js`) served as a
 * classic script that sets `window.Pi` and as an ES module that exports `Pi`, plus its types.
 * Each variant tells the SDK where it was loaded from: the sandbox page's origin by default.
 * Apps load it from their own origin, so it carries CORS and CORP headers.
 */
export function sdkRoutes(app: FastifyInstance): void {
  const dir = `${webDir()}sdk/`
  // The SDK's checks, then the SDK (createPi): one scope in each wrapper.
  const core = ['pi-sdk-checks.js', 'pi-sdk-core.js'].map((name) => readFileSync(`${dir}${name}`, 'utf8')).join('\n')
  const assets: Record<string, Asset> = {
    'pi-sdk.js': asset(
      `;(() => {\n'use strict'\n${core}\nwindow.Pi = createPi({ scriptUrl: document.currentScript?.src }).Pi\n})()\n`,
      'text/javascript; charset=utf-8',
    ),
    'pi-sdk.mjs': asset(
      `${core}\nconst created = createPi({ scriptUrl: import.meta.url })\nexport const Pi = created.Pi\nexport const PiSdkError = created.PiSdkError\nexport default Pi\n`,
      'text/javascript; charset=utf-8',
    ),
    'pi-sdk.d.ts': asset(readFileSync(`${dir}pi-sdk.d.ts`, 'utf8'), 'application/typescript; charset=utf-8'),
  }

  for (const [name, file] of Object.entries(assets)) {
    app.get(`/sdk/${name}`, { schema: { hide: true } }, async (request: FastifyRequest, reply: FastifyReply) => {
      reply
        .header('content-type', file.type)
        .header('etag', file.etag)
        .header('cache-control', 'no-cache')
        .header('access-control-allow-origin', '*')
        .header('cross-origin-resource-policy', 'cross-origin')
        .header('x-content-type-options', 'nosniff')
        // Inert if opened as a page: a script's own CSP does not bind the pages that include it.
        .header('content-security-policy', "default-src 'none'; frame-ancestors 'none'")
        .header('referrer-policy', 'no-referrer')
      if (request.headers['if-none-match'] === file.etag) return reply.code(304).send()
      return reply.send(file.body)
    })
  }
}

import fastifyStatic from '@fastify/static'
import type { FastifyInstance } from 'fastify'
import { pageFiles, SANDBOX_PAGE_HEADERS } from './sandbox-page-routes.js'
import { webDir } from './web-dir.js'

/**
 * The browser code both pages import (ARCHITECTURE.md, "The browser code"), in both modes, as it
 * is written: the UI layer (`src/web/ui/`) at `/web/ui/` and the typed API client (`src/web/api/`)
 * at `/web/api/`. The platform page (`/sandbox/ui/…`, `/ui/…`) and the console (`/console/js/…`)
 * reach them with relative imports that name `src/web/ui/` in the source tree and `/web/ui/` in the
 * URL space (a URL's `..` stops at its root). Their files carry the platform page's headers.
 */
export async function webUiRoutes(app: FastifyInstance): Promise<void> {
  app.addHook('onSend', async (_request, reply) => {
    for (const [name, value] of Object.entries(SANDBOX_PAGE_HEADERS)) reply.header(name, value)
  })
  await app.register(fastifyStatic, pageFiles(webDir(), '/web/', /^\/(ui|api)\/[a-z0-9-]+\.js$/))
}

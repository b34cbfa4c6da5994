import type { FastifyRequest } from 'fastify'
import { sessionPrincipal } from '../http/auth.js'
import { PORTAL_SECURITY } from '../http/openapi.js'
import type { PortalService } from './portal-service.js'

/** Every portal route's OpenAPI tag and security scheme. */
export const PORTAL_SCHEMA = { tags: ['Portal'], security: PORTAL_SECURITY }

/** Every portal route but `POST /portal/developer`: a session with the developer role (403 forbidden without). */
export const DEVELOPER_ROUTE = { auth: 'session', role: 'developer' } as const

/**
 * The check of the routes that read an app's data through another domain (views, the request
 * log): the caller is a member of the app (404 app_not_found for anyone else's).
 */
export const memberCheck = (portal: PortalService) => (request: FastifyRequest & { params: { app_id: string } }) =>
  portal.requireMember(sessionPrincipal(request), request.params.app_id)

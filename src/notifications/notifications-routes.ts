import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Type } from 'typebox'
import { Cursor, Id, Timestamp } from '../core/schemas.js'
import { keyPrincipal, tokenPrincipal } from '../http/auth.js'
import { errorResponses, toApiError } from '../http/errors.js'
import { ADMIN_SECURITY, KEY_SECURITY } from '../http/openapi.js'
import { NOTIFICATIONS_SCOPE, type NotificationsService, QuotaExceeded } from './notifications-service.js'
import { checkNotifyBody, MAX_BODY_LENGTH, MAX_NOTIFICATIONS_PER_REQUEST, MAX_SUBROUTE_LENGTH, MAX_TITLE_LENGTH } from './notify-input.js'

const NotifyError = Type.Object({ error: Type.String() }, { description: 'The notify endpoint keeps its own error shape' })

const DeliveredSchema = Type.Object({
  id: Type.String(),
  title: Type.String(),
  body: Type.String(),
  user_uid: Type.String(),
  subroute: Type.String(),
  seen_at: Type.Null(),
  dismissed_at: Type.Null(),
})

const NotificationSchema = Type.Object({
  id: Type.String(),
  app_id: Type.String(),
  title: Type.String(),
  body: Type.String(),
  user_uid: Type.String(),
  subroute: Type.String(),
  created_at: Timestamp(),
  seen_at: Type.Union([Timestamp(), Type.Null()]),
  dismissed_at: Type.Union([Timestamp(), Type.Null()]),
})

const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })),
  cursor: Type.Optional(Cursor({ description: 'next_cursor of the previous page' })),
})

/**
 * Notify answers `{"error": "<text>"}` for everything, as the live platform does: bad input is
 * 422 (400 past 256 notifications), the quota 403, credentials 401, the key's rate limit 429,
 * the unexpected 500.
 */
function notifyErrorHandler(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  if (error instanceof QuotaExceeded) return reply.code(403).send({ error: error.message })
  const { error: apiError, unexpected } = toApiError(error, request.routeOptions.bodyLimit)
  if (unexpected) {
    request.log.error({ err: error }, 'unexpected error')
    return reply.code(500).send({ error: 'Internal server error' })
  }
  const status = apiError.code === 'invalid_json' || apiError.code === 'invalid_arguments' ? 422 : apiError.statusCode
  return reply.code(status).send({ error: apiError.message })
}

/** The notify route's body limit (the rest of the API takes 1 MiB); its 413 names it. */
export const NOTIFY_BODY_LIMIT = 4 * 1024 * 1024

export function notificationsRoutes(app: FastifyInstance, deps: { notifications: NotificationsService }): void {
  const { notifications } = deps
  const r = app.withTypeProvider<TypeBoxTypeProvider>()

  r.post(
    '/v2/in_app_notifications/notify',
    {
      config: { auth: 'key' },
      // 256 notifications at their longest, every character escaped in JSON, fit: a valid request is never a 413.
      bodyLimit: NOTIFY_BODY_LIMIT,
      errorHandler: notifyErrorHandler,
      // The schema documents the body; the handler validates it, for the platform's 400-before-422 order.
      validatorCompiler: () => (value) => ({ value }),
      schema: {
        tags: ['Notifications'],
        operationId: 'notify',
        summary: 'Send in-app notifications to users of the app',
        security: KEY_SECURITY,
        body: Type.Object({
          notifications: Type.Array(
            Type.Object({
              title: Type.String({ minLength: 1, maxLength: MAX_TITLE_LENGTH }),
              body: Type.String({ maxLength: MAX_BODY_LENGTH }),
              user_uid: Type.String({ description: "The recipient's uid in this app" }),
              subroute: Type.String({ pattern: '^/', maxLength: MAX_SUBROUTE_LENGTH, description: 'Route within the app to open' }),
            }),
            { minItems: 1, maxItems: MAX_NOTIFICATIONS_PER_REQUEST },
          ),
        }),
        response: {
          201: Type.Object({ success: Type.Boolean(), delivered_notifications: Type.Array(DeliveredSchema) }),
          400: NotifyError,
          401: NotifyError,
          403: NotifyError,
          413: NotifyError,
          415: NotifyError,
          422: NotifyError,
          429: NotifyError,
          500: NotifyError,
        },
      },
    },
    async (request, reply) => {
      const checked = checkNotifyBody(request.body)
      if (!checked.ok) return reply.code(checked.status).send({ error: checked.message })
      const delivered = await notifications.notify(keyPrincipal(request).appId, checked.notifications)
      return reply.code(201).send({ success: true, delivered_notifications: delivered })
    },
  )

  const client = { tags: ['Client notifications'] }
  const config = { auth: 'token', scope: NOTIFICATIONS_SCOPE } as const
  const IdParams = Type.Object({ notification_id: Id() })

  r.get(
    '/v2/client/notifications',
    {
      config,
      schema: {
        ...client,
        operationId: 'clientListNotifications',
        summary: "The user's notification centre for this app, newest first",
        querystring: Type.Object({ ...PageQuery.properties, include_dismissed: Type.Optional(Type.Boolean({ default: false })) }),
        response: {
          200: Type.Object({
            notifications: Type.Array(NotificationSchema),
            next_cursor: Type.Union([Type.String(), Type.Null()]),
            unseen_count: Type.Integer({ description: 'Not seen and not dismissed' }),
          }),
          ...errorResponses(401),
        },
      },
    },
    async (request) =>
      notifications.listForUser(tokenPrincipal(request), {
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
        includeDismissed: request.query.include_dismissed ?? false,
      }),
  )

  for (const [what, path] of [
    ['seen', 'seen'],
    ['dismissed', 'dismiss'],
  ] as const) {
    r.post(
      `/v2/client/notifications/:notification_id/${path}`,
      {
        config,
        schema: {
          ...client,
          operationId: what === 'seen' ? 'clientMarkNotificationSeen' : 'clientDismissNotification',
          summary: what === 'seen' ? 'Mark a notification seen' : 'Dismiss a notification (also marks it seen)',
          params: IdParams,
          response: { 200: NotificationSchema, ...errorResponses(401, 404) },
        },
      },
      async (request) => notifications.mark(tokenPrincipal(request), request.params.notification_id, what),
    )
  }

  const Settings = Type.Object({ enabled: Type.Boolean({ description: "Whether this app's notifications reach the user" }) })
  r.get(
    '/v2/client/notifications/settings',
    {
      config,
      schema: {
        ...client,
        operationId: 'clientNotificationSettings',
        summary: "Whether the user receives this app's notifications",
        response: { 200: Settings, ...errorResponses(401) },
      },
    },
    async (request) => notifications.settings(tokenPrincipal(request)),
  )
  r.put(
    '/v2/client/notifications/settings',
    {
      config,
      schema: {
        ...client,
        operationId: 'clientSetNotificationSettings',
        summary: "Turn this app's notifications off or on for the user",
        body: Settings,
        response: { 200: Settings, ...errorResponses(401) },
      },
    },
    async (request) => notifications.setEnabled(tokenPrincipal(request), request.body.enabled),
  )
}

/** The sandbox reads any user's notification centre (every app), for tests and the console. */
export function notificationsSandboxRoutes(app: FastifyInstance, deps: { notifications: NotificationsService }): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/sandbox/users/:user_id/notifications',
    {
      config: { auth: 'admin' },
      schema: {
        tags: ['Sandbox'],
        security: ADMIN_SECURITY,
        operationId: 'sandboxListNotifications',
        summary: "Read any user's notifications, from every app or one",
        params: Type.Object({ user_id: Id() }),
        querystring: Type.Object({ ...PageQuery.properties, app_id: Type.Optional(Id()) }),
        response: {
          200: Type.Object({ notifications: Type.Array(NotificationSchema), next_cursor: Type.Union([Type.String(), Type.Null()]) }),
          ...errorResponses(401),
        },
      },
    },
    async (request) =>
      deps.notifications.listAllForUser(request.params.user_id, {
        appId: request.query.app_id,
        limit: request.query.limit ?? 20,
        cursor: request.query.cursor,
      }),
  )
}

import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyInstance } from 'fastify'
import { Type } from 'typebox'
import { tokenPrincipal } from '../http/auth.js'
import { errorResponses } from '../http/errors.js'
import type { IdentityService } from './identity-service.js'

export const UserDTOSchema = Type.Object(
  {
    uid: Type.String({ description: "The user's id in this app: stable, and different in every app" }),
    credentials: Type.Object({
      scopes: Type.Array(Type.String(), { description: 'Scopes granted to this access token' }),
      valid_until: Type.Object({
        timestamp: Type.Integer({ description: 'Expiry of the access token, Unix time in seconds' }),
        iso8601: Type.String({ description: 'The same instant, ISO 8601 UTC' }),
      }),
    }),
    username: Type.Optional(Type.String({ description: 'Present only when the username scope was granted' })),
  },
  { $id: 'UserDTO' },
)

export function meRoutes(app: FastifyInstance, deps: { identity: IdentityService }): void {
  app.withTypeProvider<TypeBoxTypeProvider>().get(
    '/v2/me',
    {
      // /me verifies a token, whatever it was granted: username is left out without its scope.
      config: { auth: 'token', scope: 'none' },
      schema: {
        operationId: 'getMe',
        tags: ['Users'],
        summary: 'Verify an access token and read the user it belongs to',
        response: { 200: UserDTOSchema, ...errorResponses(401) },
      },
    },
    async (request) => deps.identity.me(tokenPrincipal(request)),
  )
}

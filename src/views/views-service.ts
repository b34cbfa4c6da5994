import type { Selectable } from 'kysely'
import { ApiError } from '../core/errors.js'
import type { AppsTable } from '../db/schema.js'
import type { ViewsRepo } from './views-repo.js'

/** An app as the sandbox API shows it: in its list, on its page and as the answer to an edit. */
export function appView(row: Pick<Selectable<AppsTable>, 'id' | 'name' | 'network' | 'url' | 'wallet_address' | 'created_at'>) {
  return {
    app_id: row.id,
    name: row.name,
    network: row.network,
    url: row.url,
    wallet_address: row.wallet_address,
    created_at: row.created_at.toISOString(),
  }
}

/** The lookups every sandbox view starts from: an unknown app or user is a 404 that names it. */
export function viewsServiceFactory(deps: { repo: Pick<ViewsRepo, 'findApp' | 'findUser'> }) {
  const { repo } = deps
  return {
    async requireApp(appId: string) {
      const row = await repo.findApp(appId)
      if (row === undefined) throw new ApiError('app_not_found', `No app with id ${appId}.`)
      return row
    },

    async requireUser(userId: string) {
      const row = await repo.findUser(userId)
      if (row === undefined) throw new ApiError('user_not_found', `No user with id ${userId}.`)
      return row
    },
  }
}

export type ViewsService = ReturnType<typeof viewsServiceFactory>

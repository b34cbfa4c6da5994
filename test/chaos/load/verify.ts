import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import { type Client, field, type Problems } from './client.js'
import { FLAG_NAMES, type Journal, type NotificationRecord } from './journal.js'

/** Verification: read back what the journal holds. */

export interface VerifyResult {
  checked: number
  reads: number
  ledgerOk: boolean
}

async function inPool<T>(items: T[], concurrency: number, run: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next]
        next += 1
        if (item !== undefined) await run(item)
      }
    }),
  )
}

/**
 * Reads back every 2xx the journal holds (`all`) or those recorded since the last verification
 * (`new`), through the API, and checks the ledger invariants. Adds a problem for anything lost,
 * changed or half-written.
 */
export async function verifyJournal(http: Client, journal: Journal, problems: Problems, scope: 'new' | 'all'): Promise<VerifyResult> {
  // Its own count: the load may go on beside it.
  let reads = 0
  const client = {
    call: (...args: Parameters<Client['call']>) => {
      reads += 1
      return http.call(...args)
    },
  }
  const paymentIds = scope === 'all' ? [...journal.payments.keys()] : [...journal.dirty.payments]
  const hashes = scope === 'all' ? [...journal.ledger.keys()] : [...journal.dirty.ledger]
  const notificationIds = scope === 'all' ? [...journal.notifications.keys()] : [...journal.dirty.notifications]
  const userIds = scope === 'all' ? [...journal.users.keys()] : [...journal.dirty.users]
  const appIds = scope === 'all' ? [...journal.apps.keys()] : [...journal.dirty.apps]
  journal.dirty.payments.clear()
  journal.dirty.ledger.clear()
  journal.dirty.notifications.clear()
  journal.dirty.users.clear()
  journal.dirty.apps.clear()
  let checked = 0

  await inPool(paymentIds, 6, async (id) => {
    const record = journal.payments.get(id)
    if (record === undefined) return
    const reply = await client.call('GET', `/v2/payments/${id}`, { key: record.apiKey })
    if (reply.status !== 200) return problems.add(`payment ${id} answered 2xx before the crash; now GET answers ${reply.status}`)
    const p = reply.body as PaymentDTO
    for (const flag of FLAG_NAMES) {
      if (record.flags[flag] && !p.status[flag]) problems.add(`payment ${id}: ${flag} was answered true before the crash, is false after`)
    }
    if (record.txid !== null && p.transaction?.txid !== record.txid) {
      problems.add(`payment ${id}: txid ${record.txid} before the crash, ${p.transaction?.txid ?? 'none'} after`)
    }
    if (p.amount !== record.amount || p.direction !== record.direction || p.user_uid !== record.uid) {
      problems.add(`payment ${id}: amount, direction or uid changed across the crash`)
    }
    // Whole, not half-written: the flags agree with each other and a linked transaction is on the ledger.
    if (p.status.developer_completed && (!p.status.transaction_verified || p.transaction === null)) {
      problems.add(`payment ${id} is completed without a verified transaction`)
    }
    if (p.status.developer_completed && (p.status.cancelled || p.status.user_cancelled))
      problems.add(`payment ${id} is completed and cancelled`)
    if (p.transaction !== null && (scope === 'new' || record.txid === null)) {
      const tx = await client.call('GET', `/ledger/transactions/${p.transaction.txid}`)
      if (tx.status !== 200) problems.add(`payment ${id} links ${p.transaction.txid}, which the ledger answers ${tx.status}`)
      else if (field<string>(tx.body, 'memo') !== id)
        problems.add(`payment ${id} links ${p.transaction.txid}, whose memo is not the payment`)
    }
    checked += 1
  })

  await inPool(hashes, 6, async (hash) => {
    const record = journal.ledger.get(hash)
    if (record === undefined) return
    const tx = await client.call('GET', `/ledger/transactions/${hash}`)
    if (tx.status !== 200) return problems.add(`ledger transaction ${hash} answered 2xx before the crash; now GET answers ${tx.status}`)
    if (field<string>(tx.body, 'source_account') !== record.source || (field<string>(tx.body, 'memo') ?? null) !== record.memo) {
      problems.add(`ledger transaction ${hash}: source or memo changed across the crash`)
    }
    const ops = await client.call('GET', `/ledger/transactions/${hash}/operations`)
    const records = field<{ records?: Array<{ to: string; amount: string }> }>(ops.body, '_embedded')?.records ?? []
    if (ops.status !== 200 || records.length !== 1 || records[0]?.to !== record.to || records[0]?.amount !== record.amount) {
      problems.add(`ledger transaction ${hash}: its operation is missing or changed (${JSON.stringify(records)})`)
    }
    const linked = record.memo === null ? undefined : journal.payments.get(record.memo)
    if (linked !== undefined) {
      const payment = await client.call('GET', `/v2/payments/${linked.id}`, { key: linked.apiKey })
      if ((payment.body as PaymentDTO | undefined)?.transaction?.txid !== hash) {
        problems.add(`ledger transaction ${hash} pays payment ${linked.id}, which does not link it (half-written)`)
      }
    }
    checked += 1
  })

  // Notifications: read each recipient's centre for the app once.
  const byCentre = new Map<string, NotificationRecord[]>()
  for (const id of notificationIds) {
    const record = journal.notifications.get(id)
    if (record === undefined) continue
    const key = `${record.userId} ${record.appId}`
    byCentre.set(key, [...(byCentre.get(key) ?? []), record])
  }
  await inPool([...byCentre.values()], 6, async (records) => {
    const first = records[0]
    if (first === undefined) return
    const seen = new Map<string, { title: string; body: string }>()
    let cursor: string | null | undefined
    for (let page = 0; page < 20; page++) {
      const query = `app_id=${first.appId}&limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
      const reply = await client.call('GET', `/sandbox/users/${first.userId}/notifications?${query}`)
      if (reply.status !== 200) return problems.add(`notification centre of ${first.userId} answered ${reply.status}`)
      for (const n of field<Array<{ id: string; title: string; body: string }>>(reply.body, 'notifications') ?? []) seen.set(n.id, n)
      cursor = field<string | null>(reply.body, 'next_cursor')
      if (cursor === null || cursor === undefined) break
    }
    for (const record of records) {
      const found = seen.get(record.id)
      if (found === undefined) problems.add(`notification ${record.id} answered 2xx before the crash; it is not in the centre after`)
      else if (found.title !== record.title || found.body !== record.body)
        problems.add(`notification ${record.id} changed across the crash`)
      else checked += 1
    }
  })

  await inPool(userIds, 6, async (userId) => {
    const record = journal.users.get(userId)
    if (record === undefined) return
    const reply = await client.call('GET', `/sandbox/users/${userId}`)
    if (reply.status !== 200) return problems.add(`user ${userId} answered 2xx before the crash; now GET answers ${reply.status}`)
    if (field<string>(reply.body, 'username') !== record.username) problems.add(`user ${userId}: username changed across the crash`)
    const apps = field<Array<{ app_id: string; uid: string; scopes: string[] }>>(reply.body, 'apps') ?? []
    for (const [appId, uid] of record.memberships) {
      const membership = apps.find((a) => a.app_id === appId)
      if (membership === undefined || membership.uid !== uid)
        problems.add(`user ${userId}: the consent to ${appId} answered before the crash is gone`)
    }
    checked += 1
  })

  await inPool(appIds, 6, async (appId) => {
    const reply = await client.call('GET', `/sandbox/apps/${appId}`)
    if (reply.status !== 200) return problems.add(`app ${appId} answered 2xx before the crash; now GET answers ${reply.status}`)
    if (field<string>(reply.body, 'name') !== journal.apps.get(appId)) problems.add(`app ${appId}: name changed across the crash`)
    checked += 1
  })

  reads += 1
  const ledgerOk = await checkLedger(http, problems)
  return { checked, reads, ledgerOk }
}

/** GET /sandbox/ledger/check: no negative balance, total supply = funding − fees, every account balanced. */
export async function checkLedger(client: Client, problems: Problems): Promise<boolean> {
  const reply = await client.call('GET', '/sandbox/ledger/check')
  if (reply.status === 200 && field<boolean>(reply.body, 'ok') === true) return true
  problems.add(`the ledger check failed: ${reply.status} ${JSON.stringify(reply.status === 0 ? reply.error : reply.body)}`)
  return false
}

import type { PaymentDTO } from '../../../src/payments/payment-dto.js'
import type { Problems } from './client.js'

/** The journal: what each 2xx answered. */

type Flags = PaymentDTO['status']

export const FLAG_NAMES: Array<keyof Flags> = [
  'developer_approved',
  'transaction_verified',
  'developer_completed',
  'cancelled',
  'user_cancelled',
]

export function isFinal(p: { status: Flags }): boolean {
  return p.status.developer_completed || p.status.cancelled || p.status.user_cancelled
}

interface PaymentRecord {
  id: string
  apiKey: string
  direction: PaymentDTO['direction']
  amount: number
  uid: string
  from: string
  /** Every flag a 2xx showed true (the flags only ever turn true). */
  flags: Flags
  txid: string | null
}

interface LedgerRecord {
  hash: string
  source: string
  memo: string | null
  to: string
  amount: string
}

export interface NotificationRecord {
  id: string
  appId: string
  userId: string
  title: string
  body: string
}

interface UserRecord {
  userId: string
  username: string
  /** app id → uid, from each 2xx of authenticate. */
  memberships: Map<string, string>
}

export interface JournalCounts {
  payments: number
  ledgerTransactions: number
  notifications: number
  users: number
  apps: number
  total: number
}

export class Journal {
  readonly payments = new Map<string, PaymentRecord>()
  readonly ledger = new Map<string, LedgerRecord>()
  readonly notifications = new Map<string, NotificationRecord>()
  readonly users = new Map<string, UserRecord>()
  /** app id → name */
  readonly apps = new Map<string, string>()
  /** 2xx answers recorded (a payment answered five times counts five). */
  acknowledged = 0
  /** What changed since the last verification. */
  readonly dirty = {
    payments: new Set<string>(),
    ledger: new Set<string>(),
    notifications: new Set<string>(),
    users: new Set<string>(),
    apps: new Set<string>(),
  }

  constructor(private readonly problems: Problems) {}

  counts(): JournalCounts {
    const counts = {
      payments: this.payments.size,
      ledgerTransactions: this.ledger.size,
      notifications: this.notifications.size,
      users: this.users.size,
      apps: this.apps.size,
    }
    return { ...counts, total: counts.payments + counts.ledgerTransactions + counts.notifications + counts.users + counts.apps }
  }

  payment(p: PaymentDTO, apiKey: string): void {
    this.acknowledged += 1
    const known = this.payments.get(p.identifier)
    const txid = p.transaction?.txid ?? null
    if (known === undefined) {
      this.payments.set(p.identifier, {
        id: p.identifier,
        apiKey,
        direction: p.direction,
        amount: p.amount,
        uid: p.user_uid,
        from: p.from_address,
        flags: { ...p.status },
        txid,
      })
    } else {
      for (const flag of FLAG_NAMES) {
        if (known.flags[flag] && !p.status[flag])
          this.problems.add(`payment ${p.identifier}: ${flag} was true in an earlier answer, now false`)
        known.flags[flag] ||= p.status[flag]
      }
      if (known.txid !== null && txid !== known.txid)
        this.problems.add(`payment ${p.identifier}: txid ${known.txid} answered before, now ${txid}`)
      known.txid ??= txid
    }
    this.dirty.payments.add(p.identifier)
  }

  ledgerTx(tx: LedgerRecord): void {
    this.acknowledged += 1
    this.ledger.set(tx.hash, tx)
    this.dirty.ledger.add(tx.hash)
  }

  notification(n: NotificationRecord): void {
    this.acknowledged += 1
    this.notifications.set(n.id, n)
    this.dirty.notifications.add(n.id)
  }

  user(userId: string, username: string): void {
    this.acknowledged += 1
    this.users.set(userId, { userId, username, memberships: new Map() })
    this.dirty.users.add(userId)
  }

  membership(userId: string, appId: string, uid: string): void {
    this.acknowledged += 1
    this.users.get(userId)?.memberships.set(appId, uid)
    this.dirty.users.add(userId)
  }

  app(appId: string, name: string): void {
    this.acknowledged += 1
    this.apps.set(appId, name)
    this.dirty.apps.add(appId)
  }
}

import { xdr } from '@stellar/stellar-base'
import { rawPublicKey } from './ed25519.js'

/**
 * Horizon's fee_meta_xdr and result_meta_xdr of an applied transaction, as Stellar Core writes
 * them for a classic transaction: the fee charged on the source (LedgerEntryChanges), then a
 * TransactionMeta v2 with the sequence bump (txChangesBefore) and, per payment, the state and
 * update of the two accounts. Accounts here have no subentries, signers or flags: their
 * entries are built from balance and sequence alone.
 */
export interface AccountBefore {
  /** Stroops. */
  balance: bigint
  sequence: bigint
  lastModifiedLedger: number
  /**
   * An earlier transaction of the ledger being closed changed the account: its
   * `lastModifiedLedgerSeq` is that ledger, stamped at COMMIT like the changes' own.
   */
  inThisLedger?: boolean
}

export interface MetaInput {
  source: string
  /** The source's new sequence number. */
  sequence: bigint
  fee: bigint
  /** Stroops, in operation order. */
  payments: ReadonlyArray<{ from: string; to: string; amount: bigint }>
  before: ReadonlyMap<string, AccountBefore>
}

/**
 * A transaction's meta XDR with the ledger it closes left blank: the number is drawn when the
 * transaction commits (ledger-batch-repo.ts, `queue`), and is written at `feeLedgerAt` and
 * `resultLedgerAt` (byte offsets of each uint32 `lastModifiedLedgerSeq` that holds it) then.
 */
export interface MetaTemplate {
  fee: Buffer
  feeLedgerAt: number[]
  result: Buffer
  resultLedgerAt: number[]
}

const UINT32_MAX = 2 ** 32 - 1

/** An account's id in XDR, from the decoded key ed25519.ts keeps (decoding a G… address costs more than the rest of the entry). */
function accountId(address: string): xdr.AccountId {
  const raw = rawPublicKey(address)
  if (raw === null) throw new Error(`not an account id: ${address}`)
  return xdr.PublicKey.publicKeyTypeEd25519(raw)
}

/** An account's LedgerEntry as Plinth's accounts have it: no subentries, signers or flags. */
export function entry(address: string, balance: bigint, sequence: bigint, lastModified: number): xdr.LedgerEntry {
  const account = new xdr.AccountEntry({
    accountId: accountId(address),
    balance: xdr.Int64.fromString(balance.toString()),
    seqNum: xdr.Int64.fromString(sequence.toString()),
    numSubEntries: 0,
    inflationDest: null,
    flags: 0,
    homeDomain: '',
    // Master weight 1, thresholds 0: the account's own key signs alone.
    thresholds: Buffer.from([1, 0, 0, 0]),
    signers: [],
    ext: new xdr.AccountEntryExt(0),
  })
  return new xdr.LedgerEntry({
    lastModifiedLedgerSeq: lastModified,
    data: xdr.LedgerEntryData.account(account),
    ext: new xdr.LedgerEntryExt(0),
  })
}

/** One LedgerEntryChange, and whether its entry's `lastModifiedLedgerSeq` is the ledger being closed. */
interface Change {
  change: xdr.LedgerEntryChange
  stamped: boolean
}

const uint32 = (value: number): Buffer => {
  const buffer = Buffer.alloc(4)
  buffer.writeUInt32BE(value)
  return buffer
}

/**
 * XDR written piece by piece, so the offsets of the blank ledger fields are known: a
 * LedgerEntryChange is its union discriminant (4 bytes), then the LedgerEntry, whose first field
 * is `lastModifiedLedgerSeq`.
 */
class Writer {
  readonly parts: Buffer[] = []
  readonly ledgerAt: number[] = []
  private length = 0

  put(bytes: Buffer): void {
    this.parts.push(bytes)
    this.length += bytes.length
  }

  /** LedgerEntryChanges: a variable-length array, its length and then each change. */
  changes(changes: readonly Change[]): void {
    this.put(uint32(changes.length))
    for (const { change, stamped } of changes) {
      if (stamped) this.ledgerAt.push(this.length + 4)
      this.put(change.toXDR())
    }
  }

  bytes(): Buffer {
    return Buffer.concat(this.parts)
  }
}

/** Horizon's fee_meta_xdr and result_meta_xdr, with the closed ledger's number still blank (0). */
export function transactionMetaTemplate(input: MetaInput): MetaTemplate {
  const state = new Map<string, { balance: bigint; sequence: bigint; lastModified: number; stamped: boolean }>()
  for (const [address, account] of input.before) {
    const stamped = account.inThisLedger === true
    state.set(address, {
      balance: account.balance,
      sequence: account.sequence,
      lastModified: stamped ? 0 : account.lastModifiedLedger,
      stamped,
    })
  }
  const current = (address: string) => {
    const found = state.get(address)
    if (found === undefined) throw new Error(`no state for ${address}`)
    return found
  }
  /** [state before, updated after] of one account, applying `change`. */
  const move = (address: string, change: (s: { balance: bigint; sequence: bigint }) => void): Change[] => {
    const s = current(address)
    const before = {
      change: xdr.LedgerEntryChange.ledgerEntryState(entry(address, s.balance, s.sequence, s.lastModified)),
      stamped: s.stamped,
    }
    change(s)
    s.lastModified = 0
    s.stamped = true
    return [before, { change: xdr.LedgerEntryChange.ledgerEntryUpdated(entry(address, s.balance, s.sequence, 0)), stamped: true }]
  }

  const fee = new Writer()
  fee.changes(
    move(input.source, (s) => {
      s.balance -= input.fee
    }),
  )
  const txChangesBefore = move(input.source, (s) => {
    s.sequence = input.sequence
  })
  const operations = input.payments.map((payment) => [
    ...move(payment.from, (s) => {
      s.balance -= payment.amount
    }),
    ...move(payment.to, (s) => {
      s.balance += payment.amount
    }),
  ])
  // TransactionMeta, arm 2: TransactionMetaV2 { txChangesBefore, operations<OperationMeta>, txChangesAfter }.
  const result = new Writer()
  result.put(uint32(2))
  result.changes(txChangesBefore)
  result.put(uint32(operations.length))
  for (const changes of operations) result.changes(changes)
  result.changes([])
  return { fee: fee.bytes(), feeLedgerAt: fee.ledgerAt, result: result.bytes(), resultLedgerAt: result.ledgerAt }
}

/**
 * The template with its ledger written, as base64; '' when the number does not fit XDR's uint32
 * ledger sequence. The database does the same when the transaction commits (migration 0014,
 * `ledger_stamp_meta`); this one serves the tests that compare the two.
 */
export function stampLedger(bytes: Buffer, ledgerAt: readonly number[], ledger: number): string {
  if (ledger > UINT32_MAX) return ''
  const stamped = Buffer.from(bytes)
  for (const at of ledgerAt) stamped.writeUInt32BE(ledger, at)
  return stamped.toString('base64')
}

export interface HeaderInput {
  ledger: number
  /** Hex, 32 bytes; null for the first ledger. */
  prevHash: string | null
  /** Hex, 32 bytes: the ledger's first transaction's hash stands for the transaction set's. */
  transactionHash: string
  /** The most transactions a ledger may hold (the closer's PLINTH_LEDGER_BATCH_MAX). */
  maxTxSetSize: number
  closedAt: Date
  /** Stroops. */
  totalCoins: bigint
  feePool: bigint
  baseFee: number
  protocolVersion: number
}

const ZERO_HASH = Buffer.alloc(32)

/**
 * A LedgerHeader that decodes as Stellar's: its sequence, previous hash, close time, coins and
 * fee pool are the ledger's; the hashes Plinth has no counterpart for (bucket list, results) are
 * zero. Plinth's ledger hash is not this header's SHA-256 (docs/ledger.md).
 */
export function ledgerHeaderXdr(input: HeaderInput): string {
  if (input.ledger > UINT32_MAX) return ''
  const header = new xdr.LedgerHeader({
    ledgerVersion: input.protocolVersion,
    previousLedgerHash: input.prevHash === null ? ZERO_HASH : Buffer.from(input.prevHash, 'hex'),
    scpValue: new xdr.StellarValue({
      txSetHash: Buffer.from(input.transactionHash, 'hex'),
      closeTime: xdr.Uint64.fromString(Math.floor(input.closedAt.getTime() / 1000).toString()),
      upgrades: [],
      ext: xdr.StellarValueExt.stellarValueBasic(),
    }),
    txSetResultHash: ZERO_HASH,
    bucketListHash: ZERO_HASH,
    ledgerSeq: input.ledger,
    totalCoins: xdr.Int64.fromString(input.totalCoins.toString()),
    feePool: xdr.Int64.fromString(input.feePool.toString()),
    inflationSeq: 0,
    idPool: xdr.Uint64.fromString('0'),
    baseFee: input.baseFee,
    baseReserve: 0,
    maxTxSetSize: input.maxTxSetSize,
    skipList: [ZERO_HASH, ZERO_HASH, ZERO_HASH, ZERO_HASH],
    ext: new xdr.LedgerHeaderExt(0),
  })
  return header.toXDR('base64')
}

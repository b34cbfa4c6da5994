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

/**
 * A LedgerEntryChange (state or updated) of an account as Plinth's are (no subentries, signers or
 * flags) is 96 bytes of which only the key, balance, sequence and ledger vary: written directly
 * rather than built as js-xdr objects and encoded (issue 40: over four fifths of the meta's CPU).
 * test/unit/meta-xdr.test.ts checks the bytes against stellar-base's encoding.
 */
const CHANGE_BYTES = 96
const STATE = xdr.LedgerEntryChangeType.ledgerEntryState().value
const UPDATED = xdr.LedgerEntryChangeType.ledgerEntryUpdated().value
const ACCOUNT = xdr.LedgerEntryType.account().value
const KEY_TYPE_ED25519 = xdr.PublicKeyType.publicKeyTypeEd25519().value

/** One LedgerEntryChange of an account, and whether its entry's `lastModifiedLedgerSeq` is the ledger being closed. */
interface Change {
  type: number
  address: string
  balance: bigint
  sequence: bigint
  lastModified: number
  stamped: boolean
}

function writeChange(bytes: Buffer, at: number, change: Change): void {
  const raw = rawPublicKey(change.address)
  if (raw === null) throw new Error(`not an account id: ${change.address}`)
  bytes.fill(0, at, at + CHANGE_BYTES)
  // The change's arm, then the LedgerEntry: lastModifiedLedgerSeq, its data's arm (an account) and the AccountEntry.
  bytes.writeInt32BE(change.type, at)
  bytes.writeUInt32BE(change.lastModified, at + 4)
  bytes.writeInt32BE(ACCOUNT, at + 8)
  bytes.writeInt32BE(KEY_TYPE_ED25519, at + 12)
  raw.copy(bytes, at + 16)
  bytes.writeBigInt64BE(change.balance, at + 48)
  bytes.writeBigInt64BE(change.sequence, at + 56)
  // Zero: numSubEntries, inflationDest (absent), flags and homeDomain (empty) at 64 to 79.
  // Thresholds: master weight 1, the three thresholds 0; the account's own key signs alone.
  bytes[at + 80] = 1
  // Zero: signers (none), AccountEntry.ext and LedgerEntry.ext (arm 0) at 84 to 95.
}

/**
 * XDR written in place, so the offsets of the blank ledger fields are known: a LedgerEntryChange
 * is its union discriminant (4 bytes), then the LedgerEntry, whose first field is
 * `lastModifiedLedgerSeq`.
 */
class Writer {
  readonly ledgerAt: number[] = []
  private at = 0
  constructor(readonly bytes: Buffer) {}

  word(value: number): void {
    this.bytes.writeUInt32BE(value, this.at)
    this.at += 4
  }

  /** LedgerEntryChanges: a variable-length array, its length and then each change. */
  changes(changes: readonly Change[]): void {
    this.word(changes.length)
    for (const change of changes) {
      if (change.stamped) this.ledgerAt.push(this.at + 4)
      writeChange(this.bytes, this.at, change)
      this.at += CHANGE_BYTES
    }
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
  /** [state before, updated after] of one account, applying `change`. */
  const move = (address: string, change: (s: { balance: bigint; sequence: bigint }) => void): Change[] => {
    const s = state.get(address)
    if (s === undefined) throw new Error(`no state for ${address}`)
    const before: Change = {
      type: STATE,
      address,
      balance: s.balance,
      sequence: s.sequence,
      lastModified: s.lastModified,
      stamped: s.stamped,
    }
    change(s)
    s.lastModified = 0
    s.stamped = true
    return [before, { type: UPDATED, address, balance: s.balance, sequence: s.sequence, lastModified: 0, stamped: true }]
  }

  const fee = new Writer(Buffer.allocUnsafe(4 + 2 * CHANGE_BYTES))
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
  const result = new Writer(Buffer.allocUnsafe(4 + (4 + 2 * CHANGE_BYTES) + 4 + operations.length * (4 + 4 * CHANGE_BYTES) + 4))
  result.word(2)
  result.changes(txChangesBefore)
  result.word(operations.length)
  for (const changes of operations) result.changes(changes)
  result.changes([])
  return { fee: fee.bytes, feeLedgerAt: fee.ledgerAt, result: result.bytes, resultLedgerAt: result.ledgerAt }
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

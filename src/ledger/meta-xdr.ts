import { Keypair, xdr } from '@stellar/stellar-base'

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
}

export interface MetaInput {
  ledger: number
  source: string
  /** The source's new sequence number. */
  sequence: bigint
  fee: bigint
  /** Stroops, in operation order. */
  payments: ReadonlyArray<{ from: string; to: string; amount: bigint }>
  before: ReadonlyMap<string, AccountBefore>
}

const UINT32_MAX = 2 ** 32 - 1

function entry(address: string, balance: bigint, sequence: bigint, lastModified: number): xdr.LedgerEntry {
  const account = new xdr.AccountEntry({
    accountId: Keypair.fromPublicKey(address).xdrAccountId(),
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

/** LedgerEntryChanges (a variable-length array: its length, then each change), as base64. */
function entryChangesXdr(changes: xdr.LedgerEntryChange[]): string {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(changes.length)
  return Buffer.concat([length, ...changes.map((change) => change.toXDR())]).toString('base64')
}

/** Undefined when a number does not fit XDR's uint32 ledger sequence (then both stay empty). */
export function transactionMetaXdr(input: MetaInput): { feeMetaXdr: string; resultMetaXdr: string } | undefined {
  if (input.ledger > UINT32_MAX) return undefined
  const state = new Map<string, { balance: bigint; sequence: bigint; lastModified: number }>()
  for (const [address, account] of input.before) {
    state.set(address, { balance: account.balance, sequence: account.sequence, lastModified: account.lastModifiedLedger })
  }
  const current = (address: string) => {
    const found = state.get(address)
    if (found === undefined) throw new Error(`no state for ${address}`)
    return found
  }
  /** [state before, updated after] of one account, applying `change`. */
  const move = (address: string, change: (s: { balance: bigint; sequence: bigint }) => void): xdr.LedgerEntryChange[] => {
    const s = current(address)
    const before = xdr.LedgerEntryChange.ledgerEntryState(entry(address, s.balance, s.sequence, s.lastModified))
    change(s)
    s.lastModified = input.ledger
    return [before, xdr.LedgerEntryChange.ledgerEntryUpdated(entry(address, s.balance, s.sequence, s.lastModified))]
  }

  const feeChanges = move(input.source, (s) => {
    s.balance -= input.fee
  })
  const txChangesBefore = move(input.source, (s) => {
    s.sequence = input.sequence
  })
  const operations = input.payments.map(
    (payment) =>
      new xdr.OperationMeta({
        changes: [
          ...move(payment.from, (s) => {
            s.balance -= payment.amount
          }),
          ...move(payment.to, (s) => {
            s.balance += payment.amount
          }),
        ],
      }),
  )
  const meta = new xdr.TransactionMeta(2, new xdr.TransactionMetaV2({ txChangesBefore, operations, txChangesAfter: [] }))
  return { feeMetaXdr: entryChangesXdr(feeChanges), resultMetaXdr: meta.toXDR('base64') }
}

export interface HeaderInput {
  ledger: number
  /** Hex, 32 bytes; null for the first ledger. */
  prevHash: string | null
  /** Hex, 32 bytes: the one transaction's hash stands for the transaction set's. */
  transactionHash: string
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
    maxTxSetSize: 1,
    skipList: [ZERO_HASH, ZERO_HASH, ZERO_HASH, ZERO_HASH],
    ext: new xdr.LedgerHeaderExt(0),
  })
  return header.toXDR('base64')
}

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from './server-process.js'

/**
 * The three walks of issue #41 (sandbox developer, production operator, production developer):
 * each is a browser suite (test/e2e/walk-*.e2e.ts) that follows its docs in order, one test step
 * per doc step. A walk lists here, per doc, the steps it follows, in the doc's order; the doc's
 * other steps are named with why the walk leaves them to another test. test/unit/walk-headings.test.ts
 * reads the docs and fails when a doc's steps and its walk's drift apart (a heading added, renamed,
 * removed or moved); each suite defines its test steps through `walkSteps`, which fails at load when
 * a step cites a heading its walk does not list, out of order, or leaves one out.
 *
 * A doc's steps are its `##` and `###` headings, or, with `section`, that one heading's numbered
 * items (`1.`, `2.`, …), cited as `<section> › <n>` (the heading itself when it has none).
 */
export interface WalkDoc {
  /** The doc, from the repository's root. */
  path: string
  /** Only this heading's section: its numbered items are steps, cited as `<section> › <n>` (or the heading, without items). */
  section?: string
  /** The doc's steps the walk follows, in the doc's order. */
  steps: string[]
  /** The doc's other steps, each with the test that covers it instead. */
  elsewhere: Record<string, string>
}

export interface Walk {
  name: string
  file: string
  docs: WalkDoc[]
}

export const WALKS: Walk[] = [
  {
    name: 'sandbox developer',
    file: 'test/e2e/walk-sandbox-developer.e2e.ts',
    docs: [
      { path: 'README.md', section: 'Quick start', steps: ['Quick start'], elsewhere: {} },
      {
        path: 'docs/sandbox-browser.md',
        section: 'Try an app',
        steps: ['Try an app › 1', 'Try an app › 2', 'Try an app › 3'],
        elsewhere: {},
      },
      {
        path: 'docs/testing.md',
        section: 'Fixtures: trigger and seed',
        steps: ['Fixtures: trigger and seed'],
        elsewhere: {},
      },
    ],
  },
  {
    name: 'production operator',
    file: 'test/e2e/walk-production-operator.e2e.ts',
    docs: [
      {
        path: 'docs/production.md',
        steps: [
          '1. The database, the key, the mode',
          'A trial on this machine',
          '2. The operator',
          '3. Start the platform',
          '4. A developer',
          '5. An app, its domain and its key',
          '6. A user signs up',
          '7. Money',
          'Test-π from the faucet',
          '8. The user opens the app and consents',
          '9. The app’s backend verifies the user',
          '10. A user-to-app payment',
          '11. An app-to-user payment',
          '12. The operator reviews',
          'The commands',
        ],
        elsewhere: {
          'Large payments ask for the password': 'test/e2e/production-step-up.e2e.ts (the dialog asks above the amount, not below)',
        },
      },
      {
        path: 'docs/operators.md',
        steps: [
          'Support lookup',
          'Suspending',
          'Roles',
          'Password resets',
          'Issuing money',
          'The listing queue',
          'The ledger check',
          'The audit log',
        ],
        elsewhere: {
          'The last operator': 'test/integration/portal/approvals.test.ts (two operators withdrawing each other at once)',
          'Two networks, their origins and the faucet':
            'test/clients/horizon-networks.test.ts and test/integration/portal/faucet-processes.test.ts (settings: each Horizon origin, the faucet limits across processes)',
          'Two operators': 'test/e2e/operator-approvals.e2e.ts (a second operator approves)',
          'The chain, and who it holds against':
            'test/integration/accounts/audit-chain.test.ts (what the chain promises: an explanation, not a step)',
          'Upgrading a chain written before it was keyed':
            'test/integration/accounts/audit-chain.test.ts (a chain from before the key; a fresh platform has none)',
          'Keeping the head': 'test/integration/accounts/audit-chain.test.ts (audit head, then verify --head)',
        },
      },
    ],
  },
  {
    name: 'production developer',
    file: 'test/e2e/walk-production-developer.e2e.ts',
    docs: [
      {
        path: 'docs/portal.md',
        steps: [
          'Becoming a developer',
          'In the page',
          'Apps and roles',
          'Listing',
          'Changing an app’s network',
          'Verifying the domain',
          'Keys’ last use',
          'Request log',
          'The app’s tools',
          'The portal from the command line',
          '`plinth portal`',
        ],
        elsewhere: {
          Networks:
            'test/integration/portal/two-network-apps.test.ts (what an app’s network holds); the form’s Pi Testnet default in test/e2e/portal.e2e.ts',
        },
      },
    ],
  },
]

/** A heading as the walks cite it: typographic apostrophes, as the docs' prose would read. */
function normalise(heading: string): string {
  return heading.trim().replaceAll("'", '’')
}

/** The doc's steps in its order: its `##`/`###` headings, or a section's heading and numbered items. */
export function docSteps(doc: Pick<WalkDoc, 'path' | 'section'>): string[] {
  const text = readFileSync(join(REPO_ROOT, doc.path), 'utf8').replace(/^```[\s\S]*?^```$/gm, '')
  const headings = [...text.matchAll(/^(#{2,3}) (.+)$/gm)]
  if (doc.section === undefined) return headings.map((match) => normalise(match[2] ?? ''))
  const start = headings.find((match) => normalise(match[2] ?? '') === normalise(doc.section ?? ''))
  if (start?.index === undefined) return []
  const level = start[1]?.length ?? 2
  const next = headings.find((match) => (match.index ?? 0) > (start.index ?? 0) && (match[1]?.length ?? 0) <= level)
  const body = text.slice(start.index, next?.index ?? text.length)
  const items = [...body.matchAll(/^(\d+)\. /gm)].map((match) => `${normalise(doc.section ?? '')} › ${match[1]}`)
  return items.length > 0 ? items : [normalise(doc.section)]
}

/** A walk by its test file. */
export function walkOf(file: string): Walk {
  const walk = WALKS.find((candidate) => candidate.file === file)
  if (walk === undefined) throw new Error(`no walk is listed for ${file}`)
  return walk
}

/**
 * Defines a walk's test steps through `define(title, fn)` (node:test's `it`), each named after the
 * doc and heading it follows. Steps must come in each doc's order; `done()` (after the last)
 * fails when a listed step has no test.
 */
export function walkSteps(file: string, define: (title: string, fn: () => Promise<void>) => void) {
  const walk = walkOf(file)
  const next = new Map(walk.docs.map((doc) => [doc.path, 0]))
  const step = (path: string, heading: string, what: string, fn: () => Promise<void>) => {
    const doc = walk.docs.find((candidate) => candidate.path === path)
    if (doc === undefined) throw new Error(`${walk.name}: ${path} is not one of its docs`)
    const at = doc.steps.indexOf(heading)
    const expected = next.get(path) ?? 0
    if (at < 0) throw new Error(`${walk.name}: ${path} has no step "${heading}" listed in test/helpers/walks.ts`)
    if (at !== expected && at !== expected - 1) {
      throw new Error(`${walk.name}: "${heading}" of ${path} out of order (next is "${doc.steps[expected]}")`)
    }
    next.set(path, at + 1)
    define(`${path} § ${heading}: ${what}`, fn)
  }
  const done = () => {
    for (const doc of walk.docs) {
      const reached = next.get(doc.path) ?? 0
      if (reached !== doc.steps.length) throw new Error(`${walk.name}: ${doc.path} § "${doc.steps[reached]}" has no test step`)
    }
  }
  return { step, done }
}

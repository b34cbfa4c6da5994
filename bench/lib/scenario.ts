import type { BatchScenario } from './batches.js'
import type { FlowScenario } from './flows.js'
import type { RequestScenario } from './load.js'

/**
 * What the harness measures: single requests (autocannon), multi-request flows (runFlow), or a flow
 * at several counts of workers with the ledger's batch sizes. Apart from the kinds' modules, as
 * flows.ts builds on load.ts's scenario traits.
 */
export type Scenario = RequestScenario | FlowScenario | BatchScenario

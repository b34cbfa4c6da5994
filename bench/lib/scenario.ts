import type { FlowScenario } from './flows.js'
import type { RequestScenario } from './load.js'

/**
 * What the harness measures: single requests (autocannon) or multi-request flows (runFlow). Apart
 * from both kinds' modules, as flows.ts builds on load.ts's scenario traits.
 */
export type Scenario = RequestScenario | FlowScenario

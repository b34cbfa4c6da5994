import type { Scenario } from './lib.js'
import { a2uBatches, a2uLifecycle, u2aLifecycle } from './scenarios/lifecycles.js'
import { notify } from './scenarios/notify.js'
import { adStatus, helloWorld, ledgerAccount, me, paymentRead } from './scenarios/requests.js'

export const scenarios: Scenario[] = [helloWorld, me, paymentRead, adStatus, ledgerAccount, a2uLifecycle, u2aLifecycle, a2uBatches, notify]

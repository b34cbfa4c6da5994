// @ts-check
// Plinth developer console: wiring. It calls the sandbox API (and reads the ledger from /ledger).

import { byId } from '../../../web/ui/dom.js'
import { trapFocus } from '../../../web/ui/focus.js'
import { oneToastAtATime, reportElsewhere } from '../../../web/ui/toast.js'
import { ApiFailure, setAdminToken, whenTokenRefused } from './api.js'
import { refreshClock, tickClock } from './clock.js'
import { appPage, appsPage } from './pages/apps.js'
import { accountPage, ledgerPage, transactionPage } from './pages/ledger.js'
import { overviewPage } from './pages/overview.js'
import { blockingPage, paymentPage, paymentsPage } from './pages/payments.js'
import { platformPage } from './pages/platform.js'
import { requestPage, requestsPage } from './pages/requests.js'
import { mountSearch, searchPage } from './pages/search.js'
import { snapshotsPage } from './pages/snapshots.js'
import { userPage, usersPage } from './pages/users.js'
import { render, route } from './router.js'

// One toast at a time, and a toast goes with the page it was shown on.
oneToastAtATime()

route('apps', appsPage)
route('apps/:appId', appPage)
route('apps/:appId/overview', overviewPage)
route('apps/:appId/requests', requestsPage)
route('apps/:appId/requests/:id', requestPage)
route('apps/:appId/payments', paymentsPage)
route('apps/:appId/payments/:paymentId', paymentPage)
route('apps/:appId/users/:userId/blocking', blockingPage)
route('users', usersPage)
route('users/:userId', userPage)
route('platform', platformPage)
route('search', searchPage)
route('snapshots', snapshotsPage)
route('ledger', ledgerPage)
route('ledger/transactions/:hash', transactionPage)
route('ledger/accounts/:address', accountPage)

const tokenDialog = byId('token-dialog', HTMLDialogElement)
const tokenInput = byId('token-input', HTMLInputElement)
const tokenError = byId('token-error')
trapFocus(tokenDialog)

whenTokenRefused((message) => {
  tokenError.hidden = message === ''
  tokenError.textContent = message
  if (!tokenDialog.open) tokenDialog.showModal()
})
// A refused token opens the token dialog above: no toast for it too.
reportElsewhere((error) => error instanceof ApiFailure && error.code === 'invalid_admin_token')

byId('token-form').addEventListener('submit', (event) => {
  event.preventDefault()
  setAdminToken(tokenInput.value.trim())
  tokenInput.value = ''
  tokenDialog.close()
  refreshClock()
  render()
})

window.addEventListener('hashchange', () => {
  render()
  byId('main').focus()
})
mountSearch()
refreshClock()
setInterval(tickClock, 1000)
setInterval(refreshClock, 10_000)
render()

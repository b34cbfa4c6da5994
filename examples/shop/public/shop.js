// The Demo Shop's frontend. The platform's client SDK (window.Pi) does the user's side: consent,
// the payment dialog, the ad player. Everything that needs trust goes to the shop's backend,
// which asks the platform itself; this page only shows what the backend says the user owns.

const SCOPES = ['username', 'payments', 'wallet_address', 'in_app_notifications']

const $ = (id) => document.getElementById(id)
const logList = $('log')

let session = null
let catalogue = { items: [], ad_reward_coins: 0, pi_reward: 0 }
/** A paid but uncompleted payment the SDK reported at sign-in, finished once the backend knows the user. */
let incomplete = null
/** Payment callbacks may be sent more than once; each step is reported once. */
const seen = new Set()

function say(text, kind = 'info') {
  const item = document.createElement('li')
  item.className = kind
  const time = document.createElement('time')
  time.textContent = new Date().toLocaleTimeString()
  item.append(time, ` ${text}`)
  logList.prepend(item)
}

function banner(text) {
  $('banner').textContent = text
  $('banner').hidden = false
}

const errorText = (error) => (error instanceof Error ? error.message : typeof error === 'string' ? error : JSON.stringify(error))

async function backend(method, path, body) {
  const headers = { accept: 'application/json' }
  if (body !== undefined) headers['content-type'] = 'application/json'
  if (session !== null) headers.authorization = `Bearer ${session}`
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const data = await response.json().catch(() => ({}))
  if (!response.ok) {
    const error = new Error(data.message ?? `The shop answered ${response.status}`)
    error.code = data.error
    throw error
  }
  if (data.state) showState(data.state)
  return data
}

// ---- what the user owns, as the backend reports it -------------------------------------------

function showState(state) {
  const owned = $('owned')
  owned.replaceChildren()
  for (const item of state.items.filter((i) => i.count > 0)) {
    const li = document.createElement('li')
    li.dataset.testid = `owned-${item.id}`
    li.textContent = `${item.name} × ${item.count}`
    owned.append(li)
  }
  if (owned.childElementCount === 0) {
    const li = document.createElement('li')
    li.className = 'muted'
    li.textContent = 'Nothing yet.'
    owned.append(li)
  }
  $('coins').textContent = String(state.coins)
  $('pi-rewards').textContent = state.pi_rewards
}

function showCatalogue() {
  const list = $('catalogue')
  list.replaceChildren()
  for (const item of catalogue.items) {
    const card = document.createElement('article')
    card.className = 'item'
    const name = document.createElement('h3')
    name.textContent = item.name
    const description = document.createElement('p')
    description.textContent = item.description
    const button = document.createElement('button')
    button.type = 'button'
    button.className = 'primary buy'
    button.dataset.testid = `buy-${item.id}`
    button.disabled = session === null
    button.textContent = `Buy for ${item.price} Pi`
    button.addEventListener('click', () => buy(item))
    card.append(name, description, button)
    list.append(card)
  }
}

function setSignedIn(username) {
  $('signin').hidden = true
  $('whoami').hidden = false
  $('whoami').textContent = username ? `@${username}` : 'Signed in'
  for (const button of document.querySelectorAll('button.buy, .earn button')) button.disabled = false
}

// ---- sign in -----------------------------------------------------------------------------------

function onIncompletePaymentFound(payment) {
  incomplete = payment
  if (session !== null) finishIncomplete()
}

async function finishIncomplete() {
  const payment = incomplete
  incomplete = null
  say(`Found an unfinished payment (${payment.identifier}): finishing it.`)
  try {
    const answer = await backend('POST', '/api/payments/incomplete', { paymentId: payment.identifier })
    say(answer.granted ? 'The unfinished purchase is completed and delivered.' : 'The unfinished payment was cancelled: nothing delivered.')
  } catch (error) {
    say(`Could not finish that payment: ${errorText(error)}`, 'bad')
  }
}

async function signIn() {
  try {
    const auth = await window.Pi.authenticate(SCOPES, onIncompletePaymentFound)
    // The backend verifies the token with the platform (GET /v2/me); the user object is not trusted.
    const answer = await backend('POST', '/api/signin', { accessToken: auth.accessToken })
    session = answer.session
    setSignedIn(answer.state.username)
    say(`Signed in as ${answer.state.username ?? answer.state.uid}.`, 'good')
    if (incomplete !== null) await finishIncomplete()
  } catch (error) {
    say(`Sign-in failed: ${errorText(error)}`, 'bad')
  }
}

// ---- buy: a user-to-app payment ---------------------------------------------------------------

function buy(item) {
  say(`Buying ${item.name} for ${item.price} Pi…`)
  const once = (step, id) => {
    const key = `${step}:${id}`
    if (seen.has(key)) return false
    seen.add(key)
    return true
  }
  const callbacks = {
    onReadyForServerApproval: async (paymentId) => {
      if (!once('approve', paymentId)) return
      try {
        await backend('POST', '/api/payments/approve', { paymentId })
        say('The shop approved the payment: confirm it in the payment dialog.')
      } catch (error) {
        seen.delete(`approve:${paymentId}`)
        say(`The shop did not approve the payment: ${errorText(error)}`, 'bad')
      }
    },
    onReadyForServerCompletion: async (paymentId, txid) => {
      if (!once('complete', paymentId)) return
      try {
        const answer = await backend('POST', '/api/payments/complete', { paymentId, txid })
        if (answer.granted) say(`Paid and completed: ${item.name} is yours!`, 'good')
      } catch (error) {
        seen.delete(`complete:${paymentId}`)
        say(`The purchase could not be completed: ${errorText(error)}. Nothing delivered.`, 'bad')
      }
    },
    onCancel: async (paymentId) => {
      if (!once('cancel', paymentId)) return
      say(`Payment cancelled: no ${item.name} for you this time.`)
      await backend('POST', '/api/payments/cancel', { paymentId }).catch(() => {})
    },
    onError: async (error, payment) => {
      // A failed Pay the dialog offers to retry (a 503, say): the payment is still open and the user
      // decides; cancelling it would take the retry away. onCancel follows if they cancel.
      if (error.retryable) {
        say(`Pay failed: ${errorText(error)}. Try again in the payment dialog, or cancel it there.`, 'bad')
        return
      }
      say(`The payment failed: ${errorText(error)}. Nothing delivered.`, 'bad')
      // Only what is still open, and once: the platform already cancelled an expired or cancelled payment.
      const open = payment?.identifier && !payment.status.cancelled && !payment.status.user_cancelled && payment.transaction === null
      if (open && once('cancel', payment.identifier)) {
        await backend('POST', '/api/payments/cancel', { paymentId: payment.identifier }).catch(() => {})
      }
    },
  }
  try {
    const started = window.Pi.createPayment(
      // The wallet shows it as "<app's name>: <memo>" (Demo Shop: Sticker pack).
      { amount: item.price, memo: item.name, metadata: { item_id: item.id } },
      callbacks,
    )
    // A payment that cannot be created also calls onError, which reports it.
    if (started && typeof started.catch === 'function') started.catch(() => {})
  } catch (error) {
    say(`The payment could not start: ${errorText(error)}`, 'bad')
  }
}

// ---- earn --------------------------------------------------------------------------------------

async function watchAd() {
  try {
    const ad = await window.Pi.Ads.showAd('rewarded')
    if (ad.result !== 'AD_REWARDED' || !ad.adId) {
      say(`No coins: the ad ended with ${ad.result}.`)
      return
    }
    say('Ad watched: the shop is checking with the ad network…')
    const answer = await backend('POST', '/api/ads/reward', { adId: ad.adId })
    if (answer.granted) say(`+${catalogue.ad_reward_coins} coins for watching!`, 'good')
    else say(`No coins: the ad network says ${answer.status ?? 'nothing yet'}.`, 'bad')
  } catch (error) {
    say(`No coins: ${errorText(error)}`, 'bad')
  }
}

async function claimPi() {
  say(`Asking the shop for a ${catalogue.pi_reward} Pi reward…`)
  try {
    const answer = await backend('POST', '/api/rewards/pi')
    say(`${answer.amount} Pi sent to your wallet (transaction ${answer.txid.slice(0, 12)}…).`, 'good')
  } catch (error) {
    say(`No Pi reward: ${errorText(error)}`, 'bad')
  }
}

async function notifyMe() {
  try {
    const answer = await backend('POST', '/api/notify')
    if (answer.delivered) say('Notification sent: look in the notification centre.', 'good')
    else say('The notification was not delivered: notifications for this shop are off.', 'bad')
  } catch (error) {
    say(`No notification: ${errorText(error)}`, 'bad')
  }
}

// ---- start ------------------------------------------------------------------------------------

async function start() {
  const busy = (handler) => async (event) => {
    const button = event.currentTarget
    button.disabled = true
    try {
      await handler()
    } finally {
      button.disabled = false
    }
  }
  $('signin').addEventListener('click', busy(signIn))
  $('watch-ad').addEventListener('click', busy(watchAd))
  $('claim-pi').addEventListener('click', busy(claimPi))
  $('notify').addEventListener('click', busy(notifyMe))

  try {
    catalogue = await backend('GET', '/api/catalogue')
  } catch (error) {
    banner(`The shop's server did not answer: ${errorText(error)}`)
  }
  showCatalogue()
  showState({ items: [], coins: 0, pi_rewards: '0' })

  if (typeof window.Pi === 'undefined') {
    banner("The platform's SDK did not load: is Plinth running at the URL the shop was started with?")
    $('signin').disabled = true
    return
  }
  try {
    await window.Pi.init({ version: '2.0', sandbox: true })
  } catch (error) {
    banner(`Pi.init failed: ${errorText(error)}`)
  }
}

start()

// @ts-check
// Sandbox mode only: fills Swagger UI's "Authorize" with a sandbox app's server API key or a
// user's access token for that app, through the sandbox API the console uses, with the console's
// admin token when one was entered there (same tab). The key is made once per app and tab and
// reused (kept in sessionStorage, checked against the app's keys each time: a revoked or reset one
// is replaced), so clicking again leaves no new key behind. The token carries only the scopes
// ticked in the panel, and the panel says which it granted (docs/api.md, `GET /docs`).
;(() => {
  const ADMIN_TOKEN_KEY = 'plinth.console.adminToken'
  /** This tab's keys, by app id: `{ [app_id]: { key_id, api_key } }`. */
  const TRY_KEYS = 'plinth.docs.tryKeys'
  /** @type {import('../sdk/pi-sdk').Scope[]} */
  const SCOPES = ['username', 'payments', 'wallet_address', 'roles', 'in_app_notifications', 'platform', 'preferred_language']
  /** Ticked at first: what most apps ask for. */
  const DEFAULT_SCOPES = ['username', 'payments']

  /**
   * One call to the sandbox API; answers what the route `path` names answers (routes.d.ts, from the OpenAPI document).
   * @template {string} P
   * @template {import('../api/routes').Method} M
   * @param {M} method
   * @param {P} path
   * @param {import('../api/routes').Body<P, M>} [body]
   * @returns {Promise<import('../api/routes').Answer<P, M>>}
   */
  async function call(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = { accept: 'application/json', 'x-plinth-client': 'docs' }
    if (body !== undefined) headers['content-type'] = 'application/json'
    const adminToken = sessionStorage.getItem(ADMIN_TOKEN_KEY)
    if (adminToken) headers['x-admin-token'] = adminToken
    const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
    /** @type {{ error?: unknown, error_message?: unknown } | null} */
    const data = await response.json().catch(() => null)
    if (!response.ok) {
      const reason = data && typeof data.error_message === 'string' ? data.error_message : `HTTP ${response.status}`
      throw new Error(data?.error === 'invalid_admin_token' ? `${reason} Enter the admin token in the console first.` : reason)
    }
    return /** @type {import('../api/routes').Answer<P, M>} */ (data)
  }

  /**
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {Record<string, string>} [props] properties of the element (id, type, className, htmlFor, value)
   * @param {...(string | Node)} children
   */
  const make = (tag, props = {}, ...children) => {
    const node = Object.assign(document.createElement(tag), props)
    node.append(...children)
    return node
  }

  const apps = make('select', { id: 'plinth-try-app' })
  const users = make('select', { id: 'plinth-try-user' })
  const useKey = make('button', { type: 'button', id: 'plinth-use-key' }, "Use this tab's server API key of the app")
  const useToken = make('button', { type: 'button', id: 'plinth-use-token' }, "Use this user's access token, with the scopes ticked")
  const scopeBoxes = SCOPES.map((scope) => {
    const box = make('input', { type: 'checkbox', id: `plinth-scope-${scope}`, value: scope })
    box.checked = DEFAULT_SCOPES.includes(scope)
    return box
  })
  const scopes = make(
    'fieldset',
    { className: 'plinth-row' },
    make('legend', {}, 'Scopes the user grants the app'),
    ...scopeBoxes.map((box) => make('label', {}, box, ` ${box.value}`)),
  )
  const status = make('p', { id: 'plinth-try-status' })
  status.setAttribute('role', 'status')
  const panel = make(
    'section',
    { className: 'plinth-try-it' },
    make('h2', { id: 'plinth-try-title' }, 'Try it out with sandbox credentials'),
    make('div', { className: 'plinth-row' }, make('label', { htmlFor: 'plinth-try-app' }, 'App'), apps, useKey),
    make('div', { className: 'plinth-row' }, make('label', { htmlFor: 'plinth-try-user' }, 'User'), users, useToken),
    scopes,
    status,
  )
  panel.setAttribute('aria-labelledby', 'plinth-try-title')
  const header = document.querySelector('.plinth-header')
  document.body.insertBefore(panel, header ? header.nextSibling : document.getElementById('swagger-ui'))

  /**
   * @param {HTMLSelectElement} select
   * @param {Array<{ id: string, name: string }>} items
   * @param {(item: { id: string, name: string }) => string} label
   */
  function fill(select, items, label) {
    select.replaceChildren(...items.map((item) => make('option', { value: item.id }, label(item))))
  }

  async function load() {
    try {
      const [appList, userList] = await Promise.all([call('GET', '/sandbox/apps?limit=100'), call('GET', '/sandbox/users?limit=100')])
      fill(
        apps,
        appList.apps.map((a) => ({ id: a.app_id, name: a.name })),
        (a) => `${a.name} (${a.id})`,
      )
      fill(
        users,
        userList.users.map((u) => ({ id: u.user_id, name: u.username })),
        (u) => `${u.name} (${u.id})`,
      )
      status.textContent = appList.apps.length === 0 ? 'No apps yet: create one in the console.' : ''
    } catch (error) {
      status.textContent = `Could not list the sandbox's apps and users: ${/** @type {Error} */ (error).message}`
    }
  }

  /** What Swagger UI's "Authorize" dialog would store: the padlocks close, Try it out sends it. */
  /**
   * @param {string} scheme
   * @param {string} value
   * @param {string} what
   */
  function authorize(scheme, value, what) {
    const ui = window.plinthUi
    if (!ui || ui.preauthorizeApiKey(scheme, value) === null) {
      status.textContent = 'The reference is still loading: try again in a moment.'
      return
    }
    status.textContent = `${what} is set for Try it out.`
  }

  /** @returns {Record<string, { key_id: string, api_key: string }>} */
  function tabKeys() {
    try {
      const stored = JSON.parse(sessionStorage.getItem(TRY_KEYS) ?? '{}')
      return stored && typeof stored === 'object' ? stored : {}
    } catch {
      return {}
    }
  }

  /** This tab's key of the app when the app still has it unrevoked; else a new one, kept for the tab. */
  async function keyOf(/** @type {string} */ appId) {
    const kept = tabKeys()[appId]
    if (kept) {
      const app = await call('GET', `/sandbox/apps/${encodeURIComponent(appId)}`)
      if (app.keys.some((k) => k.key_id === kept.key_id && k.revoked_at === null)) return { ...kept, made: false }
    }
    const created = await call('POST', `/sandbox/apps/${encodeURIComponent(appId)}/keys`)
    sessionStorage.setItem(TRY_KEYS, JSON.stringify({ ...tabKeys(), [appId]: { key_id: created.key_id, api_key: created.api_key } }))
    return { ...created, made: true }
  }

  useKey.addEventListener('click', async () => {
    if (!apps.value) return
    try {
      const key = await keyOf(apps.value)
      const name = apps.selectedOptions[0]?.textContent
      authorize(
        'ServerApiKey',
        `Key ${key.api_key}`,
        key.made
          ? `A new server API key of ${name} (${key.key_id}, listed with the app's keys in the console; this tab reuses it)`
          : `This tab's server API key of ${name} (${key.key_id})`,
      )
    } catch (error) {
      status.textContent = `No key: ${/** @type {Error} */ (error).message}`
    }
  })

  useToken.addEventListener('click', async () => {
    if (!apps.value || !users.value) return
    const granted = /** @type {import('../sdk/pi-sdk').Scope[]} */ (scopeBoxes.filter((box) => box.checked).map((box) => box.value))
    try {
      const auth = await call('POST', `/sandbox/apps/${encodeURIComponent(apps.value)}/authenticate`, {
        user_id: users.value,
        scopes: granted,
      })
      const what = granted.length === 0 ? 'no scope' : `the scopes ${granted.join(', ')}`
      authorize('AccessToken', auth.accessToken, `${users.selectedOptions[0]?.textContent}'s access token, with ${what},`)
    } catch (error) {
      status.textContent = `No token: ${/** @type {Error} */ (error).message}`
    }
  })

  load()
})()

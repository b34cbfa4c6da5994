// @ts-check
// Sandbox mode only: fills Swagger UI's "Authorize" with a sandbox app's server API key (a new
// one, minted for this) or a user's access token for that app, through the sandbox API the
// console uses, with the console's admin token when one was entered there (same tab).
;(() => {
  const ADMIN_TOKEN_KEY = 'plinth.console.adminToken'
  /** @type {import('../sdk/pi-sdk').Scope[]} */
  const SCOPES = ['username', 'payments', 'wallet_address', 'roles', 'in_app_notifications', 'platform', 'preferred_language']

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
  const useKey = make('button', { type: 'button', id: 'plinth-use-key' }, 'Use a new server API key of this app')
  const useToken = make('button', { type: 'button', id: 'plinth-use-token' }, "Use this user's access token for the app")
  const status = make('p', { id: 'plinth-try-status' })
  status.setAttribute('role', 'status')
  const panel = make(
    'section',
    { className: 'plinth-try-it' },
    make('h2', { id: 'plinth-try-title' }, 'Try it out with sandbox credentials'),
    make('div', { className: 'plinth-row' }, make('label', { htmlFor: 'plinth-try-app' }, 'App'), apps, useKey),
    make('div', { className: 'plinth-row' }, make('label', { htmlFor: 'plinth-try-user' }, 'User'), users, useToken),
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

  useKey.addEventListener('click', async () => {
    if (!apps.value) return
    try {
      const created = await call('POST', `/sandbox/apps/${encodeURIComponent(apps.value)}/keys`)
      authorize('ServerApiKey', `Key ${created.api_key}`, `A new server API key of ${apps.selectedOptions[0]?.textContent}`)
    } catch (error) {
      status.textContent = `No key: ${/** @type {Error} */ (error).message}`
    }
  })

  useToken.addEventListener('click', async () => {
    if (!apps.value || !users.value) return
    try {
      const auth = await call('POST', `/sandbox/apps/${encodeURIComponent(apps.value)}/authenticate`, {
        user_id: users.value,
        scopes: SCOPES,
      })
      authorize('AccessToken', auth.accessToken, `${users.selectedOptions[0]?.textContent}'s access token`)
    } catch (error) {
      status.textContent = `No token: ${/** @type {Error} */ (error).message}`
    }
  })

  load()
})()

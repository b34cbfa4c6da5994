// @ts-check
// Download buttons for the sandbox API's exports (docs/api.md, "Exports"). A plain link cannot
// send X-Admin-Token, so the file is fetched with it and handed to the browser as a blob.

import { h } from '../../../web/ui/dom.js'
import { reportError, toast } from '../../../web/ui/toast.js'
import { ApiFailure } from './api.js'

// The key api.js keeps the admin token under (this tab's session storage).
const TOKEN_KEY = 'plinth.console.adminToken'

/**
 * Fetches an export and saves it under the name the server gives (Content-Disposition).
 * @param {string} path
 */
export async function download(path) {
  /** @type {Record<string, string>} */
  const headers = { 'x-plinth-client': 'console' }
  const token = sessionStorage.getItem(TOKEN_KEY) ?? ''
  if (token !== '') headers['x-admin-token'] = token
  let response
  try {
    response = await fetch(path, { headers })
  } catch {
    throw new ApiFailure(0, null)
  }
  if (!response.ok) throw new ApiFailure(response.status, await response.json().catch(() => null))
  const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'export'
  const url = URL.createObjectURL(await response.blob())
  const link = h('a', { download: name, hidden: true })
  link.href = url
  document.body.append(link)
  link.click()
  link.remove()
  setTimeout(() => URL.revokeObjectURL(url), 10_000)
  if (response.headers.get('x-plinth-export-truncated') === 'true') toast(`${name}: the newest 10,000 rows only`)
  else toast(`Downloaded ${name}`)
}

/**
 * "Export CSV" and "Export JSON" buttons for one export route: `path` (or a function answering it, read on click) without format.
 * @param {string | (() => string)} path
 * @param {string} testid
 */
export function exportButtons(path, testid) {
  /** @param {'csv' | 'json'} format */
  const button = (format) => {
    const el = h('button', { type: 'button', class: 'small', 'data-testid': `${testid}-${format}` }, `Export ${format.toUpperCase()}`)
    el.addEventListener('click', async () => {
      el.disabled = true
      try {
        const at = typeof path === 'function' ? path() : path
        await download(`${at}${at.includes('?') ? '&' : '?'}format=${format}`)
      } catch (error) {
        reportError(error)
      } finally {
        el.disabled = false
      }
    })
    return el
  }
  return h('span', { class: 'export-buttons' }, button('csv'), ' ', button('json'))
}

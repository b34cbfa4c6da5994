// @ts-check
/**
 * The one drawer under the top bar, which the wallet, the notification centre and the account panel open.
 */
import { isModalOpen } from '../../web/ui/dialogs.js'
import { byId, h } from '../../web/ui/dom.js'
import { refocus } from './page-focus.js'

/**
 * The one drawer under the top bar; `open(kind, …)` twice for the same kind closes it. Opening
 * it moves the focus to its title; Escape or Close closes it and gives the focus back to the
 * button that opened it.
 */
export function createDrawer() {
  const drawer = byId('drawer')
  const title = byId('drawer-title')
  const body = byId('drawer-body')
  title.setAttribute('tabindex', '-1')
  /** @type {string | undefined} */
  let kind
  /** @type {HTMLElement | undefined} */
  let opener
  const close = () => {
    const hadFocus = drawer.contains(document.activeElement)
    kind = undefined
    drawer.hidden = true
    body.replaceChildren()
    if (hadFocus && opener?.isConnected) opener.focus()
    opener = undefined
    refocus()
  }
  byId('drawer-close').addEventListener('click', close)
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape' && !drawer.hidden && !isModalOpen()) close()
  })
  return {
    kind: () => kind,
    close,
    /**
     * @param {string} nextKind
     * @param {string} label
     */
    toggle(nextKind, label) {
      if (kind === nextKind) {
        close()
        return false
      }
      if (kind === undefined) opener = document.activeElement instanceof HTMLElement ? document.activeElement : undefined
      kind = nextKind
      title.textContent = label
      body.replaceChildren(h('p', { class: 'muted' }, 'Loading…'))
      drawer.hidden = false
      title.focus()
      return true
    },
    /**
     * @param {string} forKind
     * @param {...(Node | string | Array<Node | string>)} nodes
     */
    fill(forKind, ...nodes) {
      if (kind === forKind) body.replaceChildren(...nodes.flat())
    },
  }
}

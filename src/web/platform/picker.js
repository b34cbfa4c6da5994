// @ts-check
/**
 * The app picker: the apps the page can open (the sandbox's apps, or production's directory), and,
 * in the sandbox, a form to open any app by its id at any URL.
 */

import { byId, h, showError } from '../../web/ui/dom.js'
import { createHomeGuide } from './account/home-guide.js'
import { refocus } from './page-focus.js'
import { isIcon } from './widgets.js'

/**
 * `ctx`: `production()`, `showView(id)`, `markTab(name)`, `setUrl(changes)`, `failIn(element)`,
 * `listApps()`, `openApp(app)` and `openAppById(appId, url)`.
 * @param {import('./types').PickerContext} ctx
 */
export function createPicker(ctx) {
  // Production: a new person's next steps, above the directory (account/home-guide.js).
  const guide = createHomeGuide()
  byId('app-list').before(guide.element)

  async function showPicker() {
    ctx.showView('picker-view')
    ctx.markTab('apps')
    if (ctx.production()) ctx.setUrl({ view: undefined, portal_app: undefined })
    showError(byId('picker-error'))
    const list = byId('app-list')
    list.replaceChildren(h('li', { class: 'muted' }, 'Loading…'))
    try {
      const apps = await ctx.listApps()
      if (ctx.production()) await guide.show(apps.length)
      list.replaceChildren(
        ...(apps.length === 0
          ? [h('li', { class: 'muted' }, ctx.production() ? 'No apps yet.' : 'No apps yet: create one with POST /sandbox/apps.')]
          : apps.map((app) =>
              h(
                'li',
                {},
                isIcon(app.icon) ? h('img', { class: 'app-icon', src: app.icon, alt: '', width: '32', height: '32' }) : '',
                h(
                  'span',
                  { class: 'grow' },
                  app.url === null
                    ? h('strong', {}, app.name)
                    : h(
                        'button',
                        {
                          type: 'button',
                          class: 'link',
                          onclick: () => ctx.openApp({ app_id: app.app_id, name: app.name, url: app.url, network: app.network }),
                        },
                        h('strong', {}, app.name),
                      ),
                  // Which network the app is on: its payments move that network's money.
                  h('span', { class: 'app-network', 'data-network': app.network }, ` ${app.network}`),
                  h('span', { class: 'muted' }, ` · ${app.url ?? 'no URL: enter one below'}`),
                  app.description ? h('span', { class: 'app-description' }, app.description) : '',
                ),
                h(
                  'button',
                  {
                    type: 'button',
                    'aria-label': `Open ${app.name}`,
                    disabled: app.url === null,
                    onclick: () => ctx.openApp({ app_id: app.app_id, name: app.name, url: app.url, network: app.network }),
                  },
                  'Open',
                ),
              ),
            )),
      )
    } catch (error) {
      guide.element.hidden = true
      list.replaceChildren()
      ctx.failIn(byId('picker-error'))(error)
    }
    // The Sign in or Close button that had the focus is gone with its view: the focus goes to this one.
    refocus()
  }

  byId('open-form').addEventListener('submit', (event) => {
    event.preventDefault()
    ctx
      .openAppById(byId('open-app-id', HTMLInputElement).value.trim(), byId('open-url', HTMLInputElement).value.trim())
      .catch(ctx.failIn(byId('picker-error')))
  })

  return { showPicker }
}

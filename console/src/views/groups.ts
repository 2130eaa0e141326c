import { html } from 'htm/preact';
import { useRef } from 'preact/hooks';
import { del, get, put } from '../api.js';
import { useAction } from './action.js';
import { can } from '../identity.js';
import { usePoll } from '../poll.js';
import { href } from '../router.js';
import type { GroupView } from '../../../src/messages/admin-wire.js';
import { Freshness, Heading, TableBox } from './common.js';

// Groups (docs/rollouts.md, "Targeting"): each named filter, its members now with a link to
// them in the device list, and, for an operator, a form that creates or changes one and a
// delete that the server refuses while a live rollout names the group.

export function GroupsView() {
  const polled = usePoll(() => get<{ groups: GroupView[] }>('/admin/groups'), 'groups');
  const action = useAction();
  const name = useRef<HTMLInputElement>(null);
  const filter = useRef<HTMLTextAreaElement>(null);

  const save = (event: Event) => {
    event.preventDefault();
    let parsed: unknown;
    try {
      parsed = JSON.parse(filter.current?.value.trim() || '{}');
    } catch {
      action.fail('The filter must be JSON, such as {"tags":["canary"]}.');
      return;
    }
    void action.run(async () => {
      const group = await put<GroupView>(`/admin/groups/${encodeURIComponent(name.current?.value.trim() ?? '')}`, { filter: parsed });
      polled.reload();
      return `Group ${group.name} saved: ${group.devices} device${group.devices === 1 ? '' : 's'} now.`;
    });
  };

  const edit = (group: GroupView) => {
    if (name.current) name.current.value = group.name;
    if (filter.current) filter.current.value = JSON.stringify(group.filter);
    name.current?.focus();
  };

  const remove = (group: GroupView) => {
    if (!confirm(`Delete the group ${group.name}? Devices keep their tags.`)) return;
    void action.run(async () => {
      await del<GroupView>(`/admin/groups/${encodeURIComponent(group.name)}`);
      polled.reload();
      return `Group ${group.name} deleted.`;
    });
  };

  const groups = polled.data?.groups;
  const writer = can('PUT', '/admin/groups/:name');
  return html`
    <${Heading}>Groups</${Heading}>
    <${Freshness} updatedAt=${polled.updatedAt} error=${polled.error} />
    <p class="note">A group is a named filter; its members are the devices that match it now. Rollout steps can name a group.</p>
    ${writer ? html`
      <form class="panel group-form" onSubmit=${save} autocomplete="off">
        <h2>Create or change a group</h2>
        <label for="group-name">Name</label>
        <input id="group-name" ref=${name} required maxlength="64" pattern="[A-Za-z0-9_.\\-]{1,64}" placeholder="canary" />
        <label for="group-filter">Filter (JSON)</label>
        <textarea id="group-filter" ref=${filter} rows="3" placeholder='{"tags":["canary"]} or {"attributes":{"hw_rev":["B","C"]}}'></textarea>
        <button type="submit" disabled=${action.busy}>Save group</button>
      </form>` : null}
    ${action.status()}
    ${groups ? (groups.length === 0 ? html`<p>No groups yet.</p>` : html`
      <${TableBox} label="Groups">
        <table>
          <thead><tr><th scope="col">Group</th><th scope="col">Filter</th><th scope="col" class="num">Members now</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>${groups.map((g) => html`
            <tr data-testid="group-row">
              <th scope="row">${g.name}</th>
              <td><code>${JSON.stringify(g.filter)}</code></td>
              <td class="num"><a href=${href(['devices'], { group: g.name })}>${g.devices}</a></td>
              <td>${writer ? html`<button type="button" onClick=${() => edit(g)}>Edit ${g.name}</button>` : null}
                ${can('DELETE', '/admin/groups/:name') ? html` <button type="button" class="danger" onClick=${() => remove(g)}>Delete ${g.name}</button>` : null}</td>
            </tr>`)}</tbody>
        </table>
      </${TableBox}>`) : null}`;
}

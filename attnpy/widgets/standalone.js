// A stand-in for the kernel's widget model on a saved page: the same
// get/set/on/save_changes calls, with compute() in place of Python.

export function localModel(state, compute) {
  const data = Object.assign({}, state);
  const handlers = {};
  const fire = (name) => (handlers[`change:${name}`] || []).slice().forEach((f) => f());
  let changed = new Set();
  const model = {
    get: (name) => data[name],
    set: (name, value) => { data[name] = value; changed.add(name); },
    save_changes() {
      const fresh = compute(data);
      Object.assign(data, fresh);
      const names = [...changed, ...Object.keys(fresh)];
      changed = new Set();
      names.forEach(fire);
    },
    on(event, f) { (handlers[event] = handlers[event] || []).push(f); },
    off(event, f) { handlers[event] = (handlers[event] || []).filter((g) => g !== f); },
  };
  Object.assign(data, compute(data));
  return model;
}

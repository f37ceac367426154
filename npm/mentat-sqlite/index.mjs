// ES module entry of mentat-sqlite: the same two functions as index.cjs.
import m from './index.cjs';

export const getLoadablePath = m.getLoadablePath;
export const load = m.load;
export default m;

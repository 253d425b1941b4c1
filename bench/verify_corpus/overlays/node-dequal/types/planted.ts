// Planted by sandlot's verify corpus: type errors against dequal's published typings.
import { dequal } from "../index";

const same: string = dequal(1, 1);
dequal(1);
export const checked: boolean = same === "yes";

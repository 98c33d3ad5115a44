// What the tests expect of the ResNet-50 overview fixture (__fixtures__/overview_resnet50.json).

/** Its breakdown categories' display names, in the server's order. */
export const RESNET_CATEGORY_LABELS = ["Kernel", "Memcpy", "Memset", "Communication", "Runtime", "DataLoader", "CPU Exec", "Other"];
